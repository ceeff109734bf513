"""`up`: build and push (optional), check the label, create model, config and endpoint, then wait."""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bidi_tts.fleet_plan import Policy
from reference_container_deploy import image as image_ops
from reference_container_deploy import scaling_setup
from reference_container_deploy.aws import ApiCall, Aws, resolve_region
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.imageref import ImageRef, ecr_uri, parse_image
from reference_container_deploy.labels import LabelInspector, RegistryInspector, check_label, docker_inspector
from reference_container_deploy.names import DeploymentNames, derive_names
from reference_container_deploy.plan import EndpointSpec, create_calls, describe_endpoint
from reference_container_deploy.quota import check_quota, quota_calls_described
from reference_container_deploy.waiter import Polling, Printer, wait_in_service


@dataclass(frozen=True, slots=True)
class UpOptions:
    """Everything `up` takes from its command line."""

    name: str
    role_arn: str
    image: str | None = None
    instance_type: str = "ml.g5.xlarge"
    instance_count: int = 1
    startup_timeout_s: int = 600
    environment: dict[str, str] = field(default_factory=dict)
    region: str | None = None
    build: bool = False
    dockerfile: Path = image_ops.DEFAULT_DOCKERFILE
    context: Path = image_ops.REPO_ROOT
    build_args: tuple[str, ...] = ()
    skip_label_check: bool = False
    wait: bool = True
    dry_run: bool = False
    polling: Polling = field(default_factory=Polling)
    autoscale: Policy | None = None
    alarms: bool = False
    first_audio_p95_ms: float = scaling_setup.DEFAULT_FIRST_AUDIO_P95_MS
    dashboard: bool = False
    force: bool = False  # deploy over the quota, or a plan with a STOP finding

    def needed_instances(self) -> int:
        """The most instances this deployment may run: what the quota must allow."""
        return max(self.instance_count, self.autoscale.max_instances if self.autoscale else 0)


def _default_tag() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime())


def _spec(opts: UpOptions, image: str) -> EndpointSpec:
    spec = EndpointSpec(
        image=image,
        role_arn=opts.role_arn,
        instance_type=opts.instance_type,
        instance_count=opts.instance_count,
        startup_timeout_s=opts.startup_timeout_s,
        environment=dict(opts.environment),
    )
    spec.validate()
    return spec


def default_inspectors(aws: Aws | None, image: ImageRef) -> list[LabelInspector]:
    """Local Docker engine first, then the registry (with the ECR token for ECR images)."""
    if aws is not None and image.ecr_account:
        session = aws
        return [docker_inspector, RegistryInspector(lambda ref: image_ops.ecr_credentials(session, ref))]
    return [docker_inspector, RegistryInspector()]


def next_steps(names: DeploymentNames, region: str) -> list[str]:
    """The exact commands to run against the new endpoint, then to remove it."""
    endpoint, region_q = shlex.quote(names.endpoint), shlex.quote(region)
    return [
        f"uv run pytest conformance --endpoint-name {endpoint} --region {region_q}",
        f"uv run locust -f loadtest/locustfile.py --endpoint-name {endpoint} --region {region_q} "
        "--headless --users 4 --spawn-rate 1 --run-time 2m",
        "uv run python -m reference_container.deploy down "
        f"--name {shlex.quote(names.name)} --region {region_q}",
    ]


def run_up(
    opts: UpOptions,
    out: Printer = print,
    inspectors: Sequence[LabelInspector] | None = None,
    runner: image_ops.Runner = image_ops.run_command,
    aws_factory: Callable[[str | None], Aws] = Aws,
) -> None:
    """Deploy. Raises `DeployError` (with its exit code) on anything it refuses or AWS rejects."""
    names = derive_names(opts.name)
    if not opts.image and not opts.build:
        raise DeployError(ExitCode.USAGE, "--image is required unless --build is given.", "pass --image URI.")
    scaling_setup.check_options(opts.autoscale, opts.instance_count, wait=opts.wait,
                                alarms=opts.alarms, dashboard=opts.dashboard,
                                first_audio_p95_ms=opts.first_audio_p95_ms)
    if opts.dry_run:
        _dry_run(opts, names, out)
        return
    aws = aws_factory(opts.region)
    uri = opts.image or _own_ecr_uri(aws, names)
    ref = parse_image(uri)
    spec = _spec(opts, uri)
    if opts.build:
        _build_and_push(aws, opts, names, ref, uri, out, inspectors, runner)
    elif opts.skip_label_check:
        out(f"label check skipped (--skip-label-check): {uri}")
    else:
        found = check_label(ref, uri, inspectors if inspectors is not None else default_inspectors(aws, ref))
        out(f"label ok: {uri} is labelled for bidirectional streaming (checked via {found.source})")
    check_quota(aws, opts.instance_type, opts.needed_instances(), force=opts.force, out=out)
    created: list[str] = []
    try:
        for call in create_calls(names, spec):
            aws.call(call)
            created.append(f"{call.operation.removeprefix('Create')} {_resource_name(call)}")
            out(f"created {created[-1]}")
        if not opts.wait:
            out(
                f"not waiting (--no-wait); follow it with: aws sagemaker describe-endpoint --endpoint-name "
                f"{names.endpoint} --region {aws.region}"
            )
        else:
            out(f"waiting for {names.endpoint} to be InService (up to {opts.polling.timeout_s:.0f} s)...")
            wait_in_service(aws, names, opts.polling, out)
            scaling_setup.apply(aws, names, _setup(opts, aws.region), out, created)
    except DeployError as exc:
        if created:
            exc.note = f"created so far: {', '.join(created)}; remove with `down --name {names.name}`"
        raise
    out(f"endpoint: {names.endpoint} ({'InService' if opts.wait else 'creating'}, region {aws.region})")
    out("next:")
    for line in next_steps(names, aws.region):
        out(f"  {line}")


def _setup(opts: UpOptions, region: str) -> scaling_setup.Setup:
    return scaling_setup.Setup(autoscale=opts.autoscale, alarms=opts.alarms,
                               first_audio_p95_ms=opts.first_audio_p95_ms, dashboard=opts.dashboard,
                               region=region)


def _resource_name(call: ApiCall) -> str:
    return str(call.params[call.operation.removeprefix("Create") + "Name"])


def _own_ecr_uri(aws: Aws, names: DeploymentNames) -> str:
    account = aws.call(ApiCall("sts", "GetCallerIdentity", {}))["Account"]
    return ecr_uri(str(account), aws.region, names.ecr_repository, _default_tag())


def _build_and_push(
    aws: Aws,
    opts: UpOptions,
    names: DeploymentNames,
    ref: ImageRef,
    uri: str,
    out: Printer,
    inspectors: Sequence[LabelInspector] | None,
    runner: image_ops.Runner,
) -> None:
    out(f"building {uri} from {opts.dockerfile}")
    image_ops.build(uri, opts.dockerfile, opts.context, opts.build_args, runner)
    if opts.skip_label_check:
        out("label check skipped (--skip-label-check)")
    else:
        found = check_label(ref, uri, inspectors if inspectors is not None else [docker_inspector])
        out(f"label ok: built image is labelled for bidirectional streaming (checked via {found.source})")
    if ref.ecr_account:
        image_ops.ensure_repository(aws, ref, names.tags(), out)
        image_ops.login(aws, ref, runner)
    out(f"pushing {uri}")
    image_ops.push(uri, runner)


def _dry_run(opts: UpOptions, names: DeploymentNames, out: Printer) -> None:
    """Print every call `up` would make, and make none (not even read-only ones)."""
    region = resolve_region(opts.region)
    uri = opts.image or ecr_uri("ACCOUNT", region, names.ecr_repository, "<timestamp>")
    spec = _spec(opts, uri)
    out("dry run: these are the calls `up` would make; none is made.")
    if not opts.image:
        out("  sts:GetCallerIdentity {}  (to name the ECR image)")
    if opts.build:
        argv = image_ops.build_argv("docker", uri, opts.dockerfile, opts.context, opts.build_args)
        out("  local: " + shlex.join(argv))
    if opts.skip_label_check:
        out("  (label check skipped)")
    else:
        where = (
            "the local image" if opts.build else "the local image, else the registry's manifest and config"
        )
        out(f"  check label com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true on {where}")
    if opts.build:
        ref = (
            parse_image(uri)
            if opts.image
            else ImageRef(
                registry=uri.split("/", 1)[0], repository=names.ecr_repository, tag="<timestamp>", digest=None
            )
        )
        if ref.ecr_account or not opts.image:
            describe, create = image_ops.ensure_repository_calls(ref, names.tags())
            out(f"  {describe.describe()}")
            out(f"  {create.describe()}  (only if the repository is missing)")
            out(f"  {image_ops.authorization_call(ref).describe()}")
            out(f"  local: docker login --username AWS --password-stdin {ref.registry}")
        out(f"  local: docker push {uri}")
    for line in quota_calls_described(opts.instance_type):
        out(f"  {line}  (refuses when {opts.needed_instances()} instance(s) exceed it"
            f"{'; --force: goes on' if opts.force else ''})")
    for call in create_calls(names, spec):
        out(f"  {call.describe()}")
    if opts.wait:
        out(
            f"  {describe_endpoint(names).describe()}  "
            f"(every {opts.polling.interval_s:.0f} s until InService, "
            f"up to {opts.polling.timeout_s:.0f} s)"
        )
    for line in scaling_setup.describe(names, _setup(opts, region)):
        out(f"  {line}")
    out(f"endpoint would be: {names.endpoint} (region {region})")
