"""Command line: `python -m reference_container.deploy up|down ...` and its exit codes."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from bidi_tts.protocol import DEFAULT_VOICE, Limits
from reference_container_deploy import autoscale
from reference_container_deploy import image as image_ops
from reference_container_deploy.down import DownOptions, run_down
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.names import MAX_NAME_LEN
from reference_container_deploy.plan import DEFAULT_INSTANCE_TYPE, DEFAULT_STARTUP_TIMEOUT_S
from reference_container_deploy.scaling_setup import DEFAULT_FIRST_AUDIO_P95_MS
from reference_container_deploy.up import UpOptions, run_up
from reference_container_deploy.waiter import Polling

EPILOG = f"""\
exit codes:
  {ExitCode.OK:3d}  done
  {ExitCode.AWS_ERROR:3d}  AWS refused a call (permissions, quota, conflict, ...); the line says the fix
  {ExitCode.USAGE:3d}  bad options or names
  {ExitCode.LABEL:3d}  the image lacks the bidirectional-streaming label, or cannot be inspected
  {ExitCode.ENDPOINT_FAILED:3d}  the endpoint ended Failed (its CloudWatch log group is printed)
  {ExitCode.TIMEOUT:3d}  waiting for the endpoint timed out
  {ExitCode.BUILD:3d}  docker build, login or push failed
  {ExitCode.NO_CREDENTIALS:3d}  no or expired AWS credentials
  {ExitCode.INTERRUPTED:3d}  interrupted (Ctrl-C)
AWS configuration is the SDK's: credentials chain, AWS_REGION/--region, and endpoint overrides
AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SAGEMAKER, AWS_ENDPOINT_URL_ECR (e.g. a local moto server).
"""


def _env_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def build_parser() -> argparse.ArgumentParser:
    """The pinned command line (CONTRACT.md section 2) plus a few documented extras."""
    parser = argparse.ArgumentParser(
        prog="python -m reference_container.deploy",
        description="Deploy the reference TTS container to a SageMaker bidirectional-streaming endpoint "
        "(plain boto3), or take it down.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{up,down,scale-out-time}")
    _up_arguments(_command(commands, "up", "create model, endpoint config and endpoint; wait for InService"))
    _down_arguments(_command(commands, "down", "remove autoscaling, alarms and dashboard, then delete endpoint, "
                                      "endpoint config and model (in that order)"))
    _scale_out_arguments(_command(commands, "scale-out-time",
                                  "add one instance to a running endpoint under a small load and time it"))
    return parser


def _command(commands: argparse._SubParsersAction[argparse.ArgumentParser], name: str,
             summary: str) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with the exit codes, as the top level's does."""
    return commands.add_parser(
        name, help=summary, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )


def _up_arguments(up: argparse.ArgumentParser) -> None:
    """`up`: what to deploy and where, how to build it, the container's settings, the wait."""
    up.add_argument(
        "--name",
        required=True,
        help=f"deployment name (at most {MAX_NAME_LEN} characters); resources are NAME-model, "
        "NAME-config, NAME-endpoint",
    )
    up.add_argument(
        "--image",
        help="image URI to deploy (used as given without --build; with --build, the "
        "tag to build and push; default with --build: ACCOUNT.dkr.ecr.REGION.amazonaws.com/NAME:TIMESTAMP)",
    )
    up.add_argument(
        "--role-arn",
        required=True,
        help="SageMaker execution role ARN (needs ECR pull and CloudWatch Logs write)",
    )
    up.add_argument(
        "--instance-type", default=DEFAULT_INSTANCE_TYPE, help="default %(default)s (one A10G GPU)"
    )
    up.add_argument(
        "--instance-count", type=int, default=None,
        help="initial instance count (default 1; with autoscaling, its minimum)",
    )
    _region(up)
    _build_arguments(up)
    up.add_argument("--no-wait", action="store_true", help="return once CreateEndpoint is accepted")
    _dry_run(up)
    _container_arguments(up)
    _scaling_arguments(up)
    _waiting(up, timeout_s=1800.0, waited_for="InService",
             poll_s=15.0, poll_help="seconds between status polls (default %(default)s)")


def _build_arguments(up: argparse.ArgumentParser) -> None:
    """`up --build`: build and push the image first; and the label check of any image."""
    up.add_argument(
        "--build",
        action="store_true",
        help="docker build the image and push it first (creates "
        "the ECR repository if missing and logs in with the ECR token)",
    )
    up.add_argument(
        "--dockerfile",
        type=Path,
        default=image_ops.DEFAULT_DOCKERFILE,
        help="Dockerfile for --build (default reference_container/Dockerfile)",
    )
    up.add_argument(
        "--context", type=Path, default=image_ops.REPO_ROOT, help="build context (default: repo root)"
    )
    up.add_argument(
        "--build-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="passed to docker build (repeatable), e.g. BASE_IMAGE=... KOKORO_ROUTE=hub",
    )
    up.add_argument(
        "--skip-label-check",
        action="store_true",
        help="do not check the image for the bidirectional-streaming label",
    )


def _scaling_arguments(up: argparse.ArgumentParser) -> None:
    """`up`: autoscaling (flags or a fleet plan), alarms, dashboard, and --force past the checks."""
    group = up.add_argument_group(
        "autoscaling (set once InService; the variant always routes by least outstanding requests)")
    group.add_argument("--autoscale-min", type=int, metavar="N", help="fewest instances")
    group.add_argument("--autoscale-max", type=int, metavar="M", help="most instances")
    group.add_argument(
        "--autoscale-target", type=float, metavar="T",
        help="target concurrent requests per instance (high-resolution ConcurrentRequestsPerModel)",
    )
    group.add_argument(
        "--autoscale-scale-in", type=float, metavar="V",
        help="remove an instance when the average stays under V for 3 minutes (default T/2)",
    )
    group.add_argument(
        "--plan", type=Path, metavar="PLAN.json",
        help="the fleet planner's --json output (python -m bidi_tts_loadtest.plan); the flags above "
        "override its values; refused when it has a STOP finding",
    )
    group.add_argument(
        "--alarms", action="store_true",
        help="also alarm on first-chunk latency p95 (SageMaker's FirstChunkLatency) and on 5xx",
    )
    group.add_argument(
        "--first-audio-p95-ms", type=float, default=DEFAULT_FIRST_AUDIO_P95_MS, metavar="MS",
        help="the --alarms latency threshold (default %(default)s)",
    )
    group.add_argument("--dashboard", action="store_true", help="also create a small CloudWatch dashboard")
    group.add_argument(
        "--force", action="store_true",
        help="deploy even over the account's instance quota, or a plan with a STOP finding",
    )


def _container_arguments(up: argparse.ArgumentParser) -> None:
    """`up`: the container's environment and how long SageMaker lets it start."""
    up.add_argument(
        "--voice",
        default=DEFAULT_VOICE,
        help="container default voice (env DEFAULT_VOICE; default %(default)s)",
    )
    up.add_argument(
        "--max-text-chars",
        type=int,
        default=Limits().max_text_chars,
        help="container limit (env MAX_TEXT_CHARS; default %(default)s)",
    )
    up.add_argument(
        "--max-message-bytes",
        type=int,
        default=Limits().max_message_bytes,
        help="container limit (env MAX_MESSAGE_BYTES; default %(default)s)",
    )
    up.add_argument(
        "--env",
        action="append",
        type=_env_pair,
        default=[],
        metavar="KEY=VALUE",
        help="extra container environment (repeatable), e.g. KOKORO_BACKEND=torch",
    )
    up.add_argument(
        "--startup-timeout",
        type=int,
        default=DEFAULT_STARTUP_TIMEOUT_S,
        help="ContainerStartupHealthCheckTimeoutInSeconds (default %(default)s: model loading)",
    )


def _down_arguments(down: argparse.ArgumentParser) -> None:
    """`down`: which deployment, whether to purge its repository and logs too, the wait."""
    down.add_argument("--name", required=True, help="the deployment name given to `up`")
    down.add_argument(
        "--purge",
        action="store_true",
        help="also delete the ECR repository of the model's "
        "image (with its images) and the endpoint's CloudWatch log group",
    )
    _region(down)
    _dry_run(down)
    _waiting(down, timeout_s=1200.0, waited_for="the endpoint deletion",
             poll_s=10.0, poll_help="seconds between status polls")


def _scale_out_arguments(parser: argparse.ArgumentParser) -> None:
    """`scale-out-time`: which endpoint, the probe's load, what counts as recovered, the waits."""
    parser.description = (
        "Hold a small probe load, add one instance (UpdateEndpointWeightsAndCapacities; billed while it runs), "
        "time first log line, ready line, InService and recovered traffic, then set the count back (Ctrl-C too)."
    )
    parser.add_argument("--name", required=True, help="the deployment name given to `up`")
    _region(parser)
    parser.add_argument("--scale-out-s", type=Path, metavar="OUT.json",
                        help='write {"scale_out_s", "stages": [...]} here (the fleet planner\'s --scale-out-s)')
    parser.add_argument("--sessions", type=int, default=2,
                        help="probe sessions held during the measurement (0: none; default %(default)s)")
    for flag, default, meaning in (
        ("--p95-ms", 1000.0, "traffic counts as recovered when the probe's first-audio p95 is at or under this"),
        ("--window", 30.0, "seconds of probe messages the p95 is taken over"),
        ("--warmup", 10.0, "seconds of probe load before the update"),
        ("--timeout", 1800.0, "give up on InService after this many seconds"),
        ("--log-grace", 120.0, "after InService, seconds to wait for log lines still missing"),
        ("--poll-interval", 5.0, "seconds between polls"),
    ):
        parser.add_argument(flag, type=float, default=default, help=f"{meaning} (default %(default)s)")
    parser.add_argument("--endpoint-url", help="the probe's SageMaker runtime edge (e.g. the local stand-in)")
    parser.add_argument("--endpoint-ca", help="CA certificate the probe trusts for --endpoint-url")


# -- the arguments both subcommands take ----------------------------------------------------------


def _region(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--region", help="AWS region (default: AWS_REGION / your AWS config)")


def _dry_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="print the calls it would make and make none")


def _waiting(parser: argparse.ArgumentParser, *, timeout_s: float, waited_for: str, poll_s: float,
             poll_help: str) -> None:
    """--wait-timeout and --poll-interval (the Polling of :mod:`reference_container_deploy.waiter`)."""
    parser.add_argument(
        "--wait-timeout",
        type=float,
        default=timeout_s,
        help=f"seconds to wait for {waited_for} (default %(default)s)",
    )
    parser.add_argument("--poll-interval", type=float, default=poll_s, help=poll_help)


def _out(line: str) -> None:
    print(line, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code (see EPILOG)."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "up":
            run_up(_up_options(args), out=_out)
        elif args.command == "down":
            run_down(_down_options(args), out=_out)
        else:
            _scale_out(args)
    except DeployError as exc:
        print(exc.one_line(), file=sys.stderr, flush=True)
        if exc.log_group:
            print(f"logs: CloudWatch log group {exc.log_group}", file=sys.stderr, flush=True)
        return int(exc.code)
    except KeyboardInterrupt:
        print("interrupted; run `down --name NAME` to remove anything already created.", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    return int(ExitCode.OK)


def _up_options(args: argparse.Namespace) -> UpOptions:
    environment = {
        "DEFAULT_VOICE": args.voice,
        "MAX_TEXT_CHARS": str(args.max_text_chars),
        "MAX_MESSAGE_BYTES": str(args.max_message_bytes),
        **dict(args.env),
    }
    scaling = autoscale.resolve(
        args.plan,
        min_instances=args.autoscale_min,
        max_instances=args.autoscale_max,
        target_value=args.autoscale_target,
        scale_in_value=args.autoscale_scale_in,
        force=args.force,
    )
    count = args.instance_count
    if count is None:
        count = scaling.min_instances if scaling else 1
    return UpOptions(
        name=args.name,
        role_arn=args.role_arn,
        image=args.image,
        instance_type=args.instance_type,
        instance_count=count,
        startup_timeout_s=args.startup_timeout,
        environment=environment,
        region=args.region,
        build=args.build,
        dockerfile=args.dockerfile,
        context=args.context,
        build_args=tuple(args.build_arg),
        skip_label_check=args.skip_label_check,
        wait=not args.no_wait,
        dry_run=args.dry_run,
        polling=Polling(timeout_s=args.wait_timeout, interval_s=args.poll_interval),
        autoscale=scaling,
        alarms=args.alarms,
        first_audio_p95_ms=args.first_audio_p95_ms,
        dashboard=args.dashboard,
        force=args.force,
    )


def _scale_out(args: argparse.Namespace) -> None:
    from reference_container_deploy.scale_out import Recovery
    from reference_container_deploy.scale_out_probe import ProbeSettings, SessionProbe, sagemaker_opener
    from reference_container_deploy.scale_out_run import ScaleOutOptions, run_scale_out

    if args.sessions < 0 or args.sessions > 16:
        raise DeployError(ExitCode.USAGE, f"--sessions {args.sessions} must be between 0 and 16.", None)
    opts = ScaleOutOptions(
        name=args.name, region=args.region, json_path=args.scale_out_s,
        recovery=Recovery(p95_ms=args.p95_ms, window_s=args.window), warmup_s=args.warmup,
        timeout_s=args.timeout, poll_s=args.poll_interval, log_grace_s=args.log_grace,
    )
    region = args.region

    def probe(endpoint: str) -> SessionProbe:
        from reference_container_deploy.aws import resolve_region

        opener = sagemaker_opener(endpoint, resolve_region(region), args.endpoint_url, args.endpoint_ca)
        return SessionProbe(opener, ProbeSettings(sessions=args.sessions))

    run_scale_out(opts, out=_out, probe_factory=probe if args.sessions else None)


def _down_options(args: argparse.Namespace) -> DownOptions:
    return DownOptions(
        name=args.name,
        region=args.region,
        purge=args.purge,
        dry_run=args.dry_run,
        polling=Polling(timeout_s=args.wait_timeout, interval_s=args.poll_interval),
    )
