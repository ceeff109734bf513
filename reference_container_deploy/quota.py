"""The account's Service Quotas limit on endpoint instances of one type, checked before `up` creates anything.

SageMaker's quota is named "<instance type> for endpoint usage" (service code `sagemaker`); its code
differs per type, so it is found by name. `ListServiceQuotas` gives the account's applied values,
`ListAWSDefaultServiceQuotas` the defaults where none is applied. The quota counts the instances of
every endpoint in the account and region, and this check does not subtract the ones other endpoints
already use: it catches a plan the account can never run, not one that is short by the others' share.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reference_container_deploy.aws import ApiCall, Aws
from reference_container_deploy.errors import DeployError, ExitCode

SERVICE_CODE = "sagemaker"
MAX_PAGES = 50  # SageMaker has a few hundred quotas, 100 a page: a bound, not a guess at the count


def quota_name(instance_type: str) -> str:
    return f"{instance_type} for endpoint usage"


@dataclass(frozen=True, slots=True)
class QuotaReading:
    """The quota found (value and where from), or why none could be read."""

    instance_type: str
    value: float | None
    source: str  # "applied", "default", or the reason it is unknown

    def line(self) -> str:
        if self.value is None:
            return f"quota: {quota_name(self.instance_type)!r} not checked ({self.source})"
        return (f"quota: {quota_name(self.instance_type)!r} allows {self.value:g} instance(s) "
                f"in this account and region ({self.source} value)")


def _find(aws: Aws, operation: str, wanted: str) -> float | None:
    token: str | None = None
    for _ in range(MAX_PAGES):
        params: dict[str, Any] = {"ServiceCode": SERVICE_CODE, "MaxResults": 100}
        if token:
            params["NextToken"] = token
        page = aws.call(ApiCall("service-quotas", operation, params))
        for quota in page.get("Quotas", []):
            if quota.get("QuotaName") == wanted and isinstance(quota.get("Value"), int | float):
                return float(quota["Value"])
        token = page.get("NextToken")
        if not token:
            return None
    return None


def read_quota(aws: Aws, instance_type: str) -> QuotaReading:
    """Look the quota up; an API that refuses or lacks it gives a reading that says why."""
    wanted = quota_name(instance_type)
    try:
        for operation, source in (("ListServiceQuotas", "applied"), ("ListAWSDefaultServiceQuotas", "default")):
            value = _find(aws, operation, wanted)
            if value is not None:
                return QuotaReading(instance_type, value, source)
    except DeployError as exc:
        # Not allowed to read quotas, or an emulator without them (moto 5.2.5 has no SageMaker quotas).
        return QuotaReading(instance_type, None, f"Service Quotas did not answer: {exc.message}")
    return QuotaReading(instance_type, None, "Service Quotas lists no such quota for sagemaker")


def check_quota(
    aws: Aws, instance_type: str, needed: int, *, force: bool, out: Callable[[str], None]
) -> QuotaReading:
    """Say what the quota allows; refuse when `needed` exceeds it, unless `force`."""
    reading = read_quota(aws, instance_type)
    out(reading.line())
    if reading.value is not None and needed > reading.value:
        if force:
            out(f"quota: {needed} instance(s) asked for, over the quota; going on (--force)")
        else:
            raise DeployError(
                ExitCode.AWS_ERROR,
                f"{needed} {instance_type} instance(s) asked for (instance count or autoscaling max), but "
                f"the account's quota {quota_name(instance_type)!r} allows {reading.value:g}.",
                "request an increase in Service Quotas (Amazon SageMaker), lower the count or "
                "--autoscale-max, or pass --force.",
            )
    return reading


def quota_calls_described(instance_type: str) -> list[str]:
    """What --dry-run prints for the check."""
    return [
        f'service-quotas:ListServiceQuotas {{"ServiceCode": "{SERVICE_CODE}"}}  '
        f"(pages, to find {quota_name(instance_type)!r}; then ListAWSDefaultServiceQuotas if unset)",
    ]
