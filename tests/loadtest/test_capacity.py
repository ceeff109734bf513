"""loadtest.capacity's arithmetic and tables (no container): demand, capacity, scheduler decisions."""

from __future__ import annotations

import argparse

import pytest

from bidi_tts.session import MessageRecord
from bidi_tts_loadtest.capacity.held import held, held_cell, missed_below
from bidi_tts_loadtest.capacity.report import compare_table, decisions_table, demand_table, table
from bidi_tts_loadtest.capacity.step import StepResult, listener_demand, sched_delta
from bidi_tts_loadtest.core.container_config import Config, Layout
from bidi_tts_loadtest.core.session_loop import TurnSample, turn_audible_s, turn_sample
from bidi_tts_loadtest.core.turn import TurnResult


def step(config: str, sessions: int, *, ttfa: float = 1.0, underruns: int = 0, sched: dict | None = None,
         turn_audio_s: float = 10.0, wall_s: float = 30.0) -> StepResult:
    turns = [TurnSample(ttfa, underruns, turn_audio_s, 0) for _ in range(3)]
    return StepResult(config, sessions, wall_s, turns, 1.0, 1.5, sched or {}, pause_s=1.0)


def test_listener_demand_is_audio_over_the_listening_cycle() -> None:
    # A 10-s turn, heard after 1 s of TTFA, then a 1-s pause: 10 s of audio every 12 s, per listener.
    assert listener_demand(1, 10.0, 1.0, 1.0) == pytest.approx(10 / 12)
    assert listener_demand(4, 10.0, 1.0, 0.0) == pytest.approx(4 * 10 / 11)
    assert listener_demand(3, 0.0, 0.0, 0.0) == 0.0


def test_sched_delta_is_per_step_and_keeps_workers() -> None:
    before = {"picks": 10, "contested": 4, "differed": 1, "depth_sum": 20, "depth_max": 3, "audio_s": 50.0,
              "synth_s": 20.0, "workers": 2}
    after = {"picks": 30, "contested": 14, "differed": 3, "depth_sum": 80, "depth_max": 5, "audio_s": 110.0,
             "synth_s": 50.0, "workers": 2}
    delta = sched_delta(before, after)
    assert delta == {"picks": 20, "contested": 10, "differed": 2, "depth_sum": 60, "audio_s": 60.0,
                     "synth_s": 30.0, "workers": 2, "depth_max": 5, "depth_max_grew": 1.0}
    assert sched_delta(before, {}) == {}
    assert sched_delta({}, after)["picks"] == 30


def test_step_busy_capacity_and_decisions() -> None:
    sched = {"picks": 20, "contested": 10, "differed": 2, "depth_sum": 60, "audio_s": 60.0, "synth_s": 30.0,
             "workers": 2, "depth_max": 5, "depth_max_grew": 0.0}
    s = step("deadline 2x1", 4, sched=sched, wall_s=30.0)
    assert s.busy == pytest.approx(30.0 / 60.0)  # 30 worker-seconds of 2 x 30
    assert s.capacity == pytest.approx(60.0 / 30.0 * 2)  # 2 audio-s per synthesis-s, two workers
    assert s.decisions() == "20 / 50% / 10% / 3.0 (<=5)"
    assert s.demand(0.0) == pytest.approx(4 * 10 / 11)
    bare = step("x", 1)
    assert bare.busy is None and bare.capacity is None and bare.decisions() == "-"


def test_tables_show_every_configuration_and_count() -> None:
    sched = {"picks": 8, "contested": 2, "differed": 1, "depth_sum": 12, "audio_s": 20.0, "synth_s": 8.0,
             "workers": 1, "depth_max": 3, "depth_max_grew": 1.0}
    steps = [step(c, n, sched=sched, ttfa=0.6 * n) for c in ("round-robin 1x2", "deadline 1x2") for n in (1, 2, 4)]
    main = table(steps, 2000.0)
    assert "| deadline 1x2 | 2 | 600 / 600 | 1200 / 1200 | 2400 / 2400 |" in main  # 2400 ms at 4: over the SLO
    decisions = decisions_table(steps)
    assert "| round-robin 1x2 | 8 / 25% / 12% / 1.5 (3) | 8 / 25% / 12% / 1.5 (3) |" in decisions
    demand = demand_table(steps, 2000.0)
    assert "| deadline 1x2 | 4 | 10.0 | 3.64 / 3.08 | 1.00 | 27% | 2.50 |" in demand


def test_held_is_the_largest_count_held_and_names_smaller_misses() -> None:
    # One outlier at a small count (2: an underrun) neither hides the larger count that held (4)
    # nor is hidden: the figure is 4, with 2 named as missed.
    steps = [step("a", 1), step("a", 2, underruns=1), step("a", 4), step("a", 8, ttfa=3.0)]
    assert held(steps, 2000.0) == 4
    assert missed_below(steps, 2000.0) == [2]
    assert held_cell(steps, 2000.0) == "4 (missed 2)"
    # Every count up to the largest held: the plain figure; nothing held at all: 0.
    clean = [step("a", 1), step("a", 2), step("a", 4, ttfa=3.0)]
    assert (held(clean, 2000.0), held_cell(clean, 2000.0)) == (2, "2")
    assert (held([step("a", 1, ttfa=3.0)], 2000.0), held_cell([step("a", 1, ttfa=3.0)], 2000.0)) == (0, "0")
    # A miss above the largest held count is not "below" it.
    assert missed_below([step("a", 1, ttfa=3.0), step("a", 2, ttfa=3.0)], 2000.0) == []
    assert "| a | 4 (missed 2) |" in table(steps, 2000.0, (1, 2))


def test_layout_parse() -> None:
    assert str(Layout.parse("2x1")) == "2x1"
    with pytest.raises(argparse.ArgumentTypeError):
        Layout.parse("2")


def test_turn_audible_ttfa_plays_the_whole_turn() -> None:
    # Two messages: the first is 0.3 s of silence (three 0.1 s frames at once), the second audible
    # from its 50th sample. One player for the turn: heard 0.3 s + 50 samples after the first byte.
    silent = MessageRecord("a", "One.", 0.1, first_audio_at=0.5, frame_times=[0.5] * 3, frame_sizes=[4800] * 3)
    loud = MessageRecord("b", "Two.", 0.2, first_audio_at=0.55, first_audible_byte=100,
                         frame_times=[0.55], frame_sizes=[4800])
    result = TurnResult(started_at=0.0, records=[silent, loud])
    assert turn_audible_s(result) == pytest.approx(0.8 + 50 / 24000)
    sample = turn_sample(result)
    assert sample.ttfa_s == pytest.approx(0.5) and sample.ttfa_audible_s == pytest.approx(0.8 + 50 / 24000)
    assert turn_audible_s(TurnResult(started_at=0.0, records=[silent])) is None
    s = StepResult("x", 1, 10.0, [sample, TurnSample(0.4, 0, 1.0, 0, 0.45)])
    assert s.ttfa_audible_ms(50) == pytest.approx((800 + 50 / 24 + 450) / 2)
    assert "| x | 0 | 450 / 495 | - | - | 626 / 784 | - | - |" in table([s], 2000.0)  # held 0: unfinished turns


def test_config_specs() -> None:
    plain = Config.parse("deadline")
    assert plain.name == "deadline 1x2" and "--onnx-threads" in plain.args() and "--max-queue" in plain.args()
    batched = Config.parse("timed=h200-eager:deadline/16x1/batch10")
    assert batched.name == "timed:h200-eager deadline 16x1 batch10"
    args = batched.args()
    assert args[args.index("--batch-window-ms") + 1] == "10" and args[args.index("--synth-workers") + 1] == "16"
    assert "--onnx-threads" not in args and args[args.index("--timed-profile") + 1] == "h200-eager"
    baseline = Config.parse("fifo/1x1/whole", backend="timed", profile="p.json")
    assert baseline.name == "timed:p fifo 1x1 whole"
    assert baseline.args()[-2:] == ["--first-clause-chars", "0"]
    for bad, why in (("lifo", "scheduler"), ("timed:deadline", "needs a profile"), ("gpu:fifo", "backend"),
                     ("deadline/batchx", "batchMS"), ("deadline/3", "WORKERSxTHREADS")):
        with pytest.raises(argparse.ArgumentTypeError, match=why):
            Config.parse(bad)


def test_message_basis_and_the_predicted_against_measured_table() -> None:
    def with_messages(config: str, ms: list[float], underruns: int = 0, audio_s: float = 10.0) -> StepResult:
        turns = [TurnSample(2.0, underruns, audio_s, 0, message_ttfa_s=[m / 1000 for m in ms])]
        return StepResult(config, 2, 30.0, turns, 1.0, 1.0, {}, 1.0, "message")

    real = with_messages("deadline 1x2", [100.0] * 19 + [1000.0], underruns=2)
    assert real.ttfa_ms(50) == pytest.approx(100.0) and real.ttfa_ms(95) > 100.0
    assert step("x", 1, ttfa=2.0).ttfa_ms(50) == pytest.approx(2000.0)  # the turn basis stays the default
    predicted = with_messages("timed:cpu deadline 1x2", [110.0] * 20, audio_s=9.0)  # turns 10% short
    rows = compare_table([real, predicted]).splitlines()
    assert len(rows) == 3 and rows[2].startswith("| deadline 1x2 | 2 | 100 / ")
    assert "| 1.10 / " in rows[2] and rows[2].endswith("| 2 / 0 | 10.0 / 9.0 | 0.33 / 0.30 |")


def test_first_basis_takes_each_turns_first_message_only() -> None:
    turns = [TurnSample(2.0, 0, 10.0, 0, message_ttfa_s=[first, 0.9, 1.2]) for first in (0.1, 0.2, 0.3)]
    first = StepResult("x", 3, 30.0, turns, 1.0, 1.0, {}, 1.0, "first")
    assert first.ttfa_ms(50) == pytest.approx(200.0)  # later messages (0.9 s, 1.2 s) are not first audio
    assert StepResult("x", 3, 30.0, turns, 1.0, 1.0, {}, 1.0, "message").ttfa_ms(50) == pytest.approx(900.0)


def test_bad_profile_is_one_line_before_any_container_starts() -> None:
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "loadtest.capacity", "--configs", "timed=nope:deadline"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 4 and "unknown timed profile 'nope'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_step_against_a_timed_container_measures_turns_messages_and_decisions(tmp_path) -> None:
    """End to end on the timed backend (no model): the capacity path that used to need real Kokoro."""
    import json
    import os

    from bidi_tts_loadtest.capacity.load import measure_step
    from tests.container.timed_server import timed_container

    known = {"tokens_per_char": 1.0, "g2p_fixed_ms": 0.0, "g2p_per_char_ms": 0.0, "call_fixed_ms": 150.0,
             "call_per_token_ms": 0.0, "audio_s_per_token": 0.05}
    (tmp_path / "p.json").write_text(json.dumps(known))
    stats = tmp_path / "stats.json"
    os.environ["SCHEDULER_STATS_FILE"] = str(stats)
    try:
        with timed_container(str(tmp_path / "p.json"), "--no-warmup") as url:
            def read() -> dict:
                return json.loads(stats.read_text()) if stats.exists() else {}

            result = measure_step(url, "timed", 2, 2.0, tokens_per_second=200.0, pause_s=0.2, read_sched=read,
                                  basis="message", arrival_s=0.5)
    finally:
        del os.environ["SCHEDULER_STATS_FILE"]
    assert result.turns and not result.errors
    # Every unit costs 150 ms, so no message's first audio can come sooner; and the scheduler counted picks.
    assert 150 <= result.ttfa_ms(50) < 2000
    assert result.sched["picks"] >= len(result.turns)
