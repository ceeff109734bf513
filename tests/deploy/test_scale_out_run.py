"""`scale-out-time` against moto (control plane, logs) and the local SageMaker runtime stand-in (the probe).

What these cannot show: moto's endpoint is InService at the new count the moment the update is
accepted and writes no logs, so the times here are near zero. The log stages are exercised by an
emulation of what SageMaker does (a new `AllTraffic/i-...` stream in the endpoint's log group when the
instance starts, labelled as such below) written into moto's CloudWatch Logs; the probe runs for real
through `bidi_tts.transports.sagemaker` and the stand-in to the toy container. Real times need a real
endpoint (docs/deploy.md)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reference_container_deploy.aws import ApiCall, Aws
from reference_container_deploy.cli import main
from reference_container_deploy.errors import DeployError, ExitCode
from reference_container_deploy.scale_out import Recovery
from reference_container_deploy.scale_out_probe import ProbeSettings, SessionProbe, sagemaker_opener
from reference_container_deploy.scale_out_run import Clock, ScaleOutOptions, run_scale_out
from tests.deploy.conftest import REGION, ROLE_ARN, Moto
from tests.sagemaker.helpers import start_gateway
from tests.toys.good import ServerThread, ToyContainer

GROUP = "/aws/sagemaker/Endpoints/so-endpoint"
FAST = ["--poll-interval", "0.05", "--warmup", "0", "--log-grace", "0"]


def endpoint(moto: Moto, count: int = 1) -> None:
    sm = moto.client("sagemaker")
    sm.create_model(ModelName="so-model", ExecutionRoleArn=ROLE_ARN, PrimaryContainer={"Image": "x"})
    sm.create_endpoint_config(EndpointConfigName="so-config", ProductionVariants=[{
        "VariantName": "AllTraffic", "ModelName": "so-model", "InstanceType": "ml.g4dn.xlarge",
        "InitialInstanceCount": count}])
    sm.create_endpoint(EndpointName="so-endpoint", EndpointConfigName="so-config")


def desired(moto: Moto) -> int:
    [variant] = moto.client("sagemaker").describe_endpoint(EndpointName="so-endpoint")["ProductionVariants"]
    return int(variant["DesiredInstanceCount"])


class EmulatedInstanceLogs(Aws):
    """An emulation of SageMaker's logging, not SageMaker: when the count goes up, the new instance's
    container writes its start and ready lines to a new stream of the endpoint's log group (here moto's)."""

    def __init__(self, region: str | None, moto: Moto) -> None:
        super().__init__(region)
        self._logs = moto.client("logs")

    def call(self, call: ApiCall) -> dict[str, Any]:
        answer = super().call(call)
        if call.operation == "UpdateEndpointWeightsAndCapacities" and \
                call.params["DesiredWeightsAndCapacities"][0]["DesiredInstanceCount"] == 2:
            now_ms = int(time.time() * 1000)
            self._logs.create_log_stream(logGroupName=GROUP, logStreamName="AllTraffic/i-0new")
            self._logs.put_log_events(logGroupName=GROUP, logStreamName="AllTraffic/i-0new", logEvents=[
                {"timestamp": now_ms + 100, "message": "ts=x level=INFO event=starting port=8080"},
                {"timestamp": now_ms + 200, "message": "ts=x level=INFO event=ready backend=toy voices=4"},
            ])
        return answer


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[tuple[str, str]]:
    with ServerThread(ToyContainer().app()) as container, start_gateway(container.url, tmp_path / "certs") as gw:
        yield gw.url, gw.ca_file


def test_every_stage_with_emulated_logs_and_a_real_probe_through_the_stand_in(
    moto: Moto, stand_in: tuple[str, str], tmp_path: Path
) -> None:
    endpoint(moto)
    logs = moto.client("logs")
    logs.create_log_group(logGroupName=GROUP)
    logs.create_log_stream(logGroupName=GROUP, logStreamName="AllTraffic/i-0old")
    logs.put_log_events(logGroupName=GROUP, logStreamName="AllTraffic/i-0old", logEvents=[
        {"timestamp": int(time.time() * 1000), "message": "ts=x level=INFO event=ready backend=toy"}])
    url, ca = stand_in

    def probe(name: str) -> SessionProbe:
        return SessionProbe(sagemaker_opener(name, REGION, url, ca), ProbeSettings(sessions=2, pause_s=0.05))

    out = tmp_path / "scale-out.json"
    lines: list[str] = []
    opts = ScaleOutOptions(name="so", json_path=out, recovery=Recovery(p95_ms=1000.0, window_s=2.0, min_samples=3),
                           warmup_s=0.5, timeout_s=30.0, poll_s=0.05, log_grace_s=5.0)
    run_scale_out(opts, lines.append, aws_factory=lambda region: EmulatedInstanceLogs(region, moto),
                  probe_factory=probe)
    measured = json.loads(out.read_text())
    found = {s["name"]: s for s in measured["stages"]}
    assert all(found[name]["at_s"] is not None for name in found), found
    assert "AllTraffic/i-0new" in found["first_log"]["detail"]  # not the old instance's ready line
    assert 0.05 < found["container_ready"]["at_s"] - found["first_log"]["at_s"] < 0.2
    assert measured["scale_out_s"] == found["in_service"]["at_s"] < 5  # moto: at once
    assert found["traffic_recovered"]["at_s"] >= found["in_service"]["at_s"]
    assert measured["probe_messages"] >= 3 and measured["probe_failures"] == 0
    assert desired(moto) == 1  # set back
    assert any(line.startswith("set so-endpoint/AllTraffic back to 1") for line in lines)


def test_cli_without_logs_or_probe_says_what_it_cannot_see(
    moto: Moto, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    endpoint(moto)
    out = tmp_path / "s.json"
    assert main(["scale-out-time", "--name", "so", "--sessions", "0", "--scale-out-s", str(out), *FAST]) == 0
    measured = json.loads(out.read_text())
    assert isinstance(measured["scale_out_s"], float)
    assert [s["at_s"] is None for s in measured["stages"]] == [True, True, False, True]
    assert any("does not exist" in note for note in measured["notes"])
    assert any("no probe" in note for note in measured["notes"])
    assert desired(moto) == 1
    assert "scale_out_s:" in capsys.readouterr().out


def test_ctrl_c_sets_the_count_back_and_writes_what_it_saw(moto: Moto, tmp_path: Path) -> None:
    endpoint(moto)
    sleeps = 0

    def sleep(seconds: float) -> None:
        nonlocal sleeps
        sleeps += 1
        if sleeps == 2:
            raise KeyboardInterrupt

    # The log group exists, so after InService the watch waits up to --log-grace for lines that never
    # come; Ctrl-C arrives in its second poll's sleep, while it still waits.
    opts = ScaleOutOptions(name="so", json_path=tmp_path / "s.json", warmup_s=0, poll_s=0.01, log_grace_s=60)
    moto.client("logs").create_log_group(logGroupName=GROUP)  # logs visible, so it waits for them
    with pytest.raises(DeployError) as err:
        run_scale_out(opts, lambda _: None, clock=Clock(sleep=sleep))
    assert err.value.code == ExitCode.INTERRUPTED
    assert desired(moto) == 1
    assert json.loads((tmp_path / "s.json").read_text())["to_instances"] == 2


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["--sessions", "99"], ExitCode.USAGE, "--sessions 99"),
        (["--timeout", "0"], ExitCode.USAGE, "--timeout 0"),
        (["--name", "nope"], ExitCode.AWS_ERROR, "DescribeEndpoint"),
    ],
)
def test_wrong_input_is_one_line(
    moto: Moto, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, says: str
) -> None:
    endpoint(moto)
    assert main(["scale-out-time", "--name", "so", "--sessions", "0", *FAST, *argv]) == code
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err, err
    assert desired(moto) == 1


def test_refuses_a_count_over_the_autoscaling_maximum(moto: Moto, capsys: pytest.CaptureFixture[str]) -> None:
    endpoint(moto)
    moto.client("application-autoscaling").register_scalable_target(
        ServiceNamespace="sagemaker", ResourceId="endpoint/so-endpoint/variant/AllTraffic",
        ScalableDimension="sagemaker:variant:DesiredInstanceCount", MinCapacity=1, MaxCapacity=1)
    assert main(["scale-out-time", "--name", "so", "--sessions", "0", *FAST]) == ExitCode.USAGE
    assert "over the autoscaling maximum 1" in capsys.readouterr().err
    assert desired(moto) == 1


def test_the_probe_records_failures_where_nothing_answers(moto: Moto) -> None:
    from bidi_tts.local_container import free_port

    probe = SessionProbe(sagemaker_opener("so-endpoint", REGION, f"https://127.0.0.1:{free_port()}", None),
                         ProbeSettings(sessions=1, pause_s=0.05))
    probe.start()
    deadline = time.monotonic() + 10
    while not probe.samples and time.monotonic() < deadline:
        time.sleep(0.05)
    probe.stop()
    samples = probe.samples
    assert samples and all(s.first_audio_ms is None for s in samples)
