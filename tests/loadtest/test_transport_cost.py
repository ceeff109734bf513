"""loadtest.transport_cost: the post's +33% for base64-in-SSE, and a measured hop through the stand-in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bidi_tts_loadtest.studies.transport_cost import main, wire_bytes

pytestmark = pytest.mark.timeout(120)


def test_bytes_reproduce_the_posts_plus_33_percent() -> None:
    w = wire_bytes(24, 99_850)
    assert w["pcm_bytes"] == 2_396_400  # the post's PCM total
    assert w["base64_bytes"] == pytest.approx(3_195_200, abs=24 * 4)  # at most padding per clip's last frame
    assert w["base64_overhead"] == pytest.approx(1 / 3, abs=0.001)
    assert w["sse_overhead"] > w["base64_overhead"]  # the JSON and SSE framing come on top
    assert 0 < w["bidi_overhead"] < 0.05  # the event-stream envelope of each 100 ms frame


def test_one_run_measures_bytes_reassembly_and_the_hop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED"):
        monkeypatch.setenv(name, "x" if name != "AWS_EC2_METADATA_DISABLED" else "true")
    out = tmp_path / "cost.json"
    assert main(["--messages", "10", "--delivery-bytes", "1000", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    row = result["reassembly"][0]
    assert row["sse_us_per_audio_s"] > row["bidi_us_per_audio_s"] > 0
    hop = result["hop"]
    assert hop["first_audio_ms_median"]["stand-in"] > hop["first_audio_ms_median"]["direct"] > 0
    assert hop["added_ms_per_hop"] == pytest.approx(
        hop["first_audio_ms_median"]["stand-in"] - hop["first_audio_ms_median"]["direct"])


def test_bad_options_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--clips", "0"])
    assert exit_info.value.code == 4  # docs/exit-codes.md: a usage error
    assert "--clips: 0 must be a positive whole number" in capsys.readouterr().err
