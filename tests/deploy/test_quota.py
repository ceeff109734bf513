"""The Service Quotas check before `up`. moto 5.2.5 has no SageMaker quotas (ListServiceQuotas is not
implemented, its defaults list only vpc), so the logic is tested against botocore's Stubber, which
checks every request and response against the real service model; the refusal end to end uses the
stub for Service Quotas and moto for the rest."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.stub import Stubber

from bidi_tts.fleet_plan import Policy as Autoscale
from reference_container_deploy.aws import Aws
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.quota import check_quota, read_quota
from reference_container_deploy.up import UpOptions, run_up
from reference_container_deploy.waiter import Polling
from tests.deploy.conftest import ECR_IMAGE, EMPTY, ROLE_ARN, Moto

G5 = "ml.g5.xlarge for endpoint usage"


def quota(name: str, value: float) -> dict[str, Any]:
    return {"ServiceCode": "sagemaker", "QuotaName": name, "QuotaCode": "L-1216C47A",
            "Value": value}


def stubbed(monkeypatch: pytest.MonkeyPatch) -> tuple[Aws, Stubber]:
    for key, value in {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x"}.items():
        monkeypatch.setenv(key, value)
    aws = Aws("us-east-1")
    client = aws.client("service-quotas")
    stub = Stubber(client)
    return aws, stub


def test_applied_value_found_across_pages_and_over_it_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    aws, stub = stubbed(monkeypatch)
    query = {"ServiceCode": "sagemaker", "MaxResults": 100}
    for _ in range(2):  # read twice: once refused, once forced
        stub.add_response("list_service_quotas", {"Quotas": [quota("ml.g4dn.xlarge for endpoint usage", 8)],
                                                  "NextToken": "p2"}, query)
        stub.add_response("list_service_quotas", {"Quotas": [quota(G5, 2)]}, {**query, "NextToken": "p2"})
    lines: list[str] = []
    with stub:
        with pytest.raises(DeployError) as err:
            check_quota(aws, "ml.g5.xlarge", 3, force=False, out=lines.append)
        assert err.value.code == ExitCode.AWS_ERROR
        assert "allows 2" in err.value.message and "--force" in (err.value.fix or "")
        reading = check_quota(aws, "ml.g5.xlarge", 3, force=True, out=lines.append)
        stub.assert_no_pending_responses()
    assert reading.value == 2 and reading.source == "applied"
    assert lines[0] == "quota: 'ml.g5.xlarge for endpoint usage' allows 2 instance(s) in this account and " \
                       "region (applied value)"
    assert any("--force" in line for line in lines[1:])


def test_within_the_quota_goes_on_and_the_default_is_used_when_none_is_applied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    aws, stub = stubbed(monkeypatch)
    stub.add_response("list_service_quotas", {"Quotas": []})
    stub.add_response("list_aws_default_service_quotas", {"Quotas": [quota(G5, 4)]})
    with stub:
        reading = check_quota(aws, "ml.g5.xlarge", 4, force=False, out=lambda _: None)
    assert (reading.value, reading.source) == (4, "default")


def test_a_refusing_or_missing_api_is_said_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    aws, stub = stubbed(monkeypatch)
    stub.add_client_error("list_service_quotas", "AccessDeniedException", "not allowed", 400)
    with stub:
        reading = read_quota(aws, "ml.g5.xlarge")
    assert reading.value is None and "not checked" in reading.line() and "not allowed" in reading.line()
    aws, stub = stubbed(monkeypatch)
    stub.add_response("list_service_quotas", {"Quotas": []})
    stub.add_response("list_aws_default_service_quotas", {"Quotas": []})
    with stub:
        assert "lists no such quota" in read_quota(aws, "ml.g5.xlarge").line()


def test_up_refuses_before_creating_anything_when_autoscale_max_exceeds_the_quota(
    moto: Moto, monkeypatch: pytest.MonkeyPatch
) -> None:
    aws, stub = stubbed(monkeypatch)
    stub.add_response("list_service_quotas", {"Quotas": [quota("ml.g4dn.xlarge for endpoint usage", 3)]})
    opts = UpOptions(name="quota", role_arn=ROLE_ARN, image=ECR_IMAGE, instance_type="ml.g4dn.xlarge",
                     instance_count=1, skip_label_check=True, polling=Polling(timeout_s=5, interval_s=0.05),
                     autoscale=Autoscale(min_instances=1, max_instances=4, target_value=2, scale_in_value=1))
    with stub, pytest.raises(DeployError) as err:
        run_up(opts, out=lambda _: None, aws_factory=lambda region: aws)
    assert "4 ml.g4dn.xlarge instance(s) asked for" in err.value.one_line()
    assert moto.inventory() == EMPTY
