"""Names derived from --name, image references, and the settings checks of the endpoint spec."""

from __future__ import annotations

import pytest

from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.imageref import ecr_uri, parse_image
from reference_container_deploy.names import MAX_NAME_LEN, derive_names
from reference_container_deploy.plan import EndpointSpec, create_calls

ROLE = "arn:aws:iam::123456789012:role/SageMakerExecution"


def test_names_get_suffixes_and_coexist() -> None:
    names = derive_names("kokoro-tts")
    assert (names.model, names.endpoint_config, names.endpoint) == (
        "kokoro-tts-model",
        "kokoro-tts-config",
        "kokoro-tts-endpoint",
    )
    assert names.log_group == "/aws/sagemaker/Endpoints/kokoro-tts-endpoint"
    assert derive_names("other").endpoint != names.endpoint


@pytest.mark.parametrize("bad", ["", "-lead", "trail-", "under_score", "dot.name", "space name", "ü"])
def test_names_breaking_sagemaker_rules_are_refused(bad: str) -> None:
    with pytest.raises(DeployError) as err:
        derive_names(bad)
    assert err.value.code == ExitCode.USAGE and err.value.fix


def test_name_length_leaves_room_for_the_longest_suffix() -> None:
    assert len(derive_names("a" * MAX_NAME_LEN).endpoint) == 63
    with pytest.raises(DeployError, match="at most"):
        derive_names("a" * (MAX_NAME_LEN + 1))


def test_parse_image_references() -> None:
    ecr = parse_image("123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/kokoro:v1")
    assert (ecr.ecr_account, ecr.ecr_region, ecr.repository, ecr.reference) == (
        "123456789012",
        "eu-west-1",
        "team/kokoro",
        "v1",
    )
    local = parse_image("127.0.0.1:5000/kokoro:dev")
    assert (local.registry, local.repository, local.tag, local.ecr_account) == (
        "127.0.0.1:5000",
        "kokoro",
        "dev",
        None,
    )
    hub = parse_image("python")
    assert (hub.registry, hub.repository, hub.reference) == (
        "registry-1.docker.io",
        "library/python",
        "latest",
    )
    digest = "sha256:" + "a" * 64
    assert parse_image(f"localhost:5000/x@{digest}").reference == digest
    assert ecr_uri("123456789012", "cn-north-1", "k").endswith(".amazonaws.com.cn/k:latest")


@pytest.mark.parametrize("bad", ["UPPER/case:v1", "repo:bad tag", "x@sha256:nothex"])
def test_bad_image_references_are_usage_errors(bad: str) -> None:
    with pytest.raises(DeployError) as err:
        parse_image(bad)
    assert err.value.code == ExitCode.USAGE


@pytest.mark.parametrize(
    "change",
    [
        {"role_arn": "SageMakerExecution"},
        {"role_arn": "arn:aws:iam::123456789012:user/me"},
        {"instance_type": "g5.xlarge"},
        {"instance_count": 0},
        {"startup_timeout_s": 5},
        {"environment": {"BAD-KEY": "x"}},
    ],
)
def test_spec_validation_names_the_bad_setting(change: dict) -> None:
    spec = EndpointSpec(**{"image": "repo:tag", "role_arn": ROLE, **change})
    with pytest.raises(DeployError) as err:
        spec.validate()
    assert err.value.code == ExitCode.USAGE


def test_create_calls_carry_the_settings() -> None:
    spec = EndpointSpec(
        image="repo:tag", role_arn=ROLE, instance_count=3, environment={"DEFAULT_VOICE": "am_adam"}
    )
    spec.validate()
    model, config, endpoint = create_calls(derive_names("n"), spec)
    assert model.params["PrimaryContainer"]["Environment"] == {"DEFAULT_VOICE": "am_adam"}
    assert config.params["ProductionVariants"][0]["InitialInstanceCount"] == 3
    assert config.params["ProductionVariants"][0]["InstanceType"] == "ml.g5.xlarge"
    assert endpoint.params == {
        "EndpointName": "n-endpoint",
        "EndpointConfigName": "n-config",
        "Tags": model.params["Tags"],
    }
