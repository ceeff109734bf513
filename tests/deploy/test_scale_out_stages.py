"""The stage rules of scale-out time on recorded timestamps (what moto cannot produce: an instance that
takes minutes, its log stream, a probe that degrades and recovers).

The timeline below is made up to the shape of a real scale-out (the stand-in for a recording of one:
there is none yet, see docs/deploy.md); each test breaks one rule and shows the stage move or vanish."""

from __future__ import annotations

from dataclasses import replace

from reference_container_deploy.scale_out import (
    LogEvent,
    Observations,
    ProbeSample,
    Recovery,
    Status,
    p95,
    result,
    stages,
)

T0 = 1_800_000_000.0
OLD, NEW = "AllTraffic/i-0aaa", "AllTraffic/i-0bbb"
RULE = Recovery(p95_ms=800.0, window_s=20.0, min_samples=3)


def timeline() -> Observations:
    obs = Observations(started_at=T0, target_count=2, streams_before=frozenset({OLD}))
    obs.logs = [
        LogEvent(OLD, T0 + 5, "ts=... level=INFO event=message_done first_audio_s=0.9"),
        LogEvent(OLD, T0 + 30, "ts=... level=INFO event=ready backend=onnx"),  # an old instance's line
        LogEvent(NEW, T0 + 142.0, "ts=... level=INFO event=starting host=0.0.0.0 port=8080"),
        LogEvent(NEW, T0 + 201.5, "ts=... level=INFO event=ready backend=onnx voices=54"),
    ]
    obs.statuses = [Status(T0 + 1, "Updating", 1), Status(T0 + 200, "Updating", 1),
                    Status(T0 + 236.0, "InService", 2)]
    # Slow (1.5 s) while one instance carries the load, fast (300 ms) once two do.
    obs.probes = [ProbeSample(T0 + t, 1500.0) for t in range(0, 240, 4)]
    obs.probes += [ProbeSample(T0 + t, 300.0) for t in range(240, 300, 4)]
    return obs


def at(obs: Observations, rule: Recovery = RULE) -> dict[str, float | None]:
    return {s.name: s.at_s for s in stages(obs, rule)}


def test_a_recorded_scale_out_gives_each_stage_at_its_time() -> None:
    found = at(timeline())
    # traffic_recovered: the first sample at or after InService whose 20 s window has p95 <= 800 ms:
    # 256's window (236..256) still holds the slow sample of 236 (its p95 is the slowest of 6), 260's does not.
    assert found == {"first_log": 142.0, "container_ready": 201.5, "in_service": 236.0, "traffic_recovered": 260.0}
    out = result(timeline(), RULE, endpoint="e", from_count=1)
    assert out["scale_out_s"] == 236.0 and out["to_instances"] == 2
    assert [s["name"] for s in out["stages"]] == ["first_log", "container_ready", "in_service",  # type: ignore[union-attr]
                                                   "traffic_recovered"]


def test_lines_on_streams_that_existed_before_do_not_count() -> None:
    obs = timeline()
    obs.logs = [e for e in obs.logs if e.stream == OLD]  # the old instance's ready line stays
    found = at(obs)
    assert found["first_log"] is None and found["container_ready"] is None


def test_lines_before_the_update_do_not_count() -> None:
    obs = timeline()
    obs.logs = [replace(e, at=T0 - 10) if e.stream == NEW else e for e in obs.logs]
    assert at(obs)["first_log"] is None


def test_in_service_at_the_old_count_is_not_the_new_instance() -> None:
    obs = timeline()
    obs.statuses = [Status(T0 + 1, "InService", 1), Status(T0 + 300, "InService", 1)]
    found = at(obs)
    assert found["in_service"] is None and found["traffic_recovered"] is None
    assert result(obs, RULE, endpoint="e", from_count=1)["scale_out_s"] is None


def test_a_failed_probe_in_the_window_holds_recovery_back() -> None:
    obs = timeline()
    obs.probes.append(ProbeSample(T0 + 258, None))  # fails inside the windows of 258..278 s
    assert at(obs)["traffic_recovered"] == 280.0


def test_fast_samples_before_in_service_do_not_count_and_slow_ones_after_never_recover() -> None:
    obs = timeline()
    obs.probes = [ProbeSample(T0 + t, 200.0) for t in range(0, 230, 4)]
    obs.probes += [ProbeSample(T0 + t, 1500.0) for t in range(236, 300, 4)]
    assert at(obs)["traffic_recovered"] is None
    obs.probes = []
    assert at(obs)["traffic_recovered"] is None  # no probe: not measured


def test_p95_is_nearest_rank() -> None:
    assert p95([float(v) for v in range(1, 21)]) == 19.0
    assert p95([5.0]) == 5.0
    assert p95([float(v) for v in range(1, 101)]) == 95.0


def test_messages_from_before_in_service_do_not_count_towards_the_window() -> None:
    obs = timeline()
    obs.probes = [ProbeSample(T0 + t, 300.0) for t in range(200, 236, 4)]  # fast, before InService (236 s)
    obs.probes += [ProbeSample(T0 + 237, 300.0), ProbeSample(T0 + 238, 300.0)]
    assert at(obs)["traffic_recovered"] is None  # only 2 messages since InService, 3 needed
    obs.probes.append(ProbeSample(T0 + 239, 300.0))
    assert at(obs)["traffic_recovered"] == 239.0
