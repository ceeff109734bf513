"""loadtest.bidi_vs_batch against the toy container: bidi reaches first audio sooner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadtest.bidi_vs_batch import main
from tests.toys.good import ServerThread, ToyConfig, ToyContainer

pytestmark = pytest.mark.timeout(120)


def test_bidi_beats_batch_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "bvb.json"
    with ServerThread(ToyContainer(ToyConfig(first_audio_delay_s=0.05)).app()) as srv:
        code = main(["--container-url", srv.url, "--tokens-per-second", "60", "--first-token-ms", "50",
                     "--trials", "2", "--json", str(out)])
    assert code == 0
    result = json.loads(out.read_text())
    for key in ("ttfa_bidi_ms", "ttfa_batch_ms", "ratio", "trials"):
        assert key in result
    assert len(result["trials"]) == 2
    # Batch waits for every token (~30 words at 60/s = ~0.5 s) before sending anything.
    assert result["ttfa_batch_ms"] > result["ttfa_bidi_ms"]
    assert result["ratio"] == pytest.approx(result["ttfa_batch_ms"] / result["ttfa_bidi_ms"])
    for row in result["trials"]:
        assert row["ttfa_batch_ms"] >= 50 + (row["answer_chars"] / 8) / 60 * 1000 * 0.5
