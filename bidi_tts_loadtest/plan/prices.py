"""On-demand prices of SageMaker real-time inference instances, with where and when they were read.

The table is what the AWS sample (aws-samples/sample-kokoro-tts-for-ai-agents) plans with; prices change
and differ by region, so a plan names the table's date and region, and ``--price`` overrides it.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Where the table's numbers come from, printed beside every cost a plan computes from them.
SOURCE = "as quoted by the sample, on-demand us-east-1, retrieved 2026-12-02"
REGION = "us-east-1"
RETRIEVED = "2026-12-02"

#: USD per instance-hour, SageMaker real-time inference, on demand, us-east-1.
US_EAST_1: dict[str, float] = {
    "ml.g5.xlarge": 1.408,
    "ml.g5.2xlarge": 2.816,
    "ml.g5.4xlarge": 5.632,
    "ml.g4dn.xlarge": 0.736,
    "ml.g4dn.2xlarge": 1.120,
    "ml.p3.2xlarge": 4.284,
    "ml.c5.xlarge": 0.238,
    "ml.c5.2xlarge": 0.476,
}
TABLES: dict[str, dict[str, float]] = {REGION: US_EAST_1}


class UnknownPrice(ValueError):
    """No price for this instance type in this region, and none given."""


@dataclass(frozen=True)
class Price:
    usd_per_hour: float
    source: str


def price_for(instance_type: str, region: str = REGION, override: float | None = None) -> Price:
    """The hourly price of `instance_type`: `override` when given, else the table's for `region`."""
    if override is not None:
        return Price(override, "given with --price")
    table = TABLES.get(region, {})
    if instance_type not in table:
        known = ", ".join(sorted(TABLES))
        raise UnknownPrice(f"no price for {instance_type} in {region} (the table covers {known}: "
                           f"{', '.join(sorted(US_EAST_1))}); give --price USD_PER_HOUR")
    return Price(table[instance_type], SOURCE)
