"""`down`: remove autoscaling, alarms and dashboard, delete endpoint (and wait), endpoint config and model;
keep ECR and logs unless --purge."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from reference_container_deploy import scaling_setup
from reference_container_deploy.aws import ApiCall, Aws, is_not_found
from reference_container_deploy.errors import DeployError
from reference_container_deploy.imageref import parse_image
from reference_container_deploy.names import DeploymentNames, derive_names
from reference_container_deploy.waiter import Polling, Printer, wait_deleted


@dataclass(frozen=True, slots=True)
class DownOptions:
    """Everything `down` takes from its command line."""

    name: str
    region: str | None = None
    purge: bool = False
    dry_run: bool = False
    polling: Polling = field(default_factory=lambda: Polling(timeout_s=1200.0, interval_s=10.0))


def delete_calls(names: DeploymentNames) -> list[ApiCall]:
    """DeleteEndpoint, DeleteEndpointConfig, DeleteModel: the order SageMaker needs."""
    return [
        ApiCall("sagemaker", "DeleteEndpoint", {"EndpointName": names.endpoint}),
        ApiCall("sagemaker", "DeleteEndpointConfig", {"EndpointConfigName": names.endpoint_config}),
        ApiCall("sagemaker", "DeleteModel", {"ModelName": names.model}),
    ]


def _missing_ok(aws: Aws, call: ApiCall) -> dict | None:
    """Run `call`; None when the resource does not exist (down is safe to run twice)."""
    try:
        return aws.call(call)
    except DeployError as exc:
        if exc.__cause__ is not None and is_not_found(exc.__cause__):
            return None
        raise


def run_down(opts: DownOptions, out: Printer = print, aws_factory: Callable[[str | None], Aws] = Aws) -> None:
    """Take the deployment down. Raises `DeployError` on anything AWS rejects."""
    names = derive_names(opts.name)
    deletes = delete_calls(names)
    if opts.dry_run:
        out("dry run: these are the calls `down` would make; none is made.")
        out(f'  sagemaker:DescribeModel {{"ModelName": "{names.model}"}}  (to find the ECR repository)')
        for line in scaling_setup.describe_removal(names):
            out(f"  {line}")
        out(f"  {deletes[0].describe()}")
        out(f'  sagemaker:DescribeEndpoint {{"EndpointName": "{names.endpoint}"}}  (until it is gone)')
        for call in deletes[1:]:
            out(f"  {call.describe()}")
        if opts.purge:
            out('  ecr:DeleteRepository {"force": true, "repositoryName": <the model image\'s repository>}')
            out(f'  logs:DeleteLogGroup {{"logGroupName": "{names.log_group}"}}')
        return
    aws = aws_factory(opts.region)
    model = _missing_ok(aws, ApiCall("sagemaker", "DescribeModel", {"ModelName": names.model}))
    image = str(((model or {}).get("PrimaryContainer") or {}).get("Image") or "")
    # Before the endpoint: no policy may act on an endpoint that is going away.
    scaling_setup.remove(aws, names, out)

    if _missing_ok(aws, deletes[0]) is None:
        out(f"endpoint {names.endpoint}: not found, nothing to delete")
    else:
        out(f"deleting endpoint {names.endpoint} ...")
        wait_deleted(aws, names, opts.polling, out)
    for call, label, name in (
        (deletes[1], "endpoint config", names.endpoint_config),
        (deletes[2], "model", names.model),
    ):
        if _missing_ok(aws, call) is None:
            out(f"{label} {name}: not found, nothing to delete")
        else:
            out(f"deleted {label} {name}")

    kept = _purge_or_keep(aws, names, image, opts.purge, out)
    if kept:
        out("kept: " + "; ".join(kept) + " (pass --purge to delete them)")
    out("S3: this tool stores no data in S3 (the weights are in the image), so there is none to delete.")


def _purge_or_keep(aws: Aws, names: DeploymentNames, image: str, purge: bool, out: Printer) -> list[str]:
    kept: list[str] = []
    ref = None
    if image:
        try:
            ref = parse_image(image)
        except DeployError:
            ref = None
    if ref is not None and ref.ecr_account:
        repo = f"ECR repository {ref.repository} (account {ref.ecr_account})"
        if purge:
            call = ApiCall(
                "ecr",
                "DeleteRepository",
                {"registryId": ref.ecr_account, "repositoryName": ref.repository, "force": True},
            )
            gone = _missing_ok(aws, call)
            out(f"deleted {repo} and its images" if gone is not None else f"{repo}: not found")
        else:
            kept.append(repo)
    elif image:
        out(f"image {image} is not in ECR; nothing to purge there")
    else:
        out("no model found, so no ECR repository to consider")
    log_group = ApiCall("logs", "DeleteLogGroup", {"logGroupName": names.log_group})
    if purge:
        gone = _missing_ok(aws, log_group)
        out(
            f"deleted log group {names.log_group}"
            if gone is not None
            else f"log group {names.log_group}: not found"
        )
    else:
        kept.append(f"CloudWatch log group {names.log_group} (if SageMaker created it)")
    return kept
