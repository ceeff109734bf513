"""The report as an author uses it: filter and sort the cases, follow a clause id to its text, and on
a case page play and see the audio each session received, underruns marked (issue 25).

Unit checks of the recording and the page, then the pages in headless Chromium (skipped where
Debian's chromium is not installed), then one real run of the suite to show the frames reach the page.
"""

from __future__ import annotations

import base64
import io
import math
import os
import re
import struct
import subprocess
import sys
import wave
from pathlib import Path

import pytest

from bidi_tts import protocol
from bidi_tts.frames import FrameKind
from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.clauses import CLAUSES
from bidi_tts_conformance.model import Case, CaseResult, Verdict
from bidi_tts_conformance.report import Entry, RunInfo, utc_now
from bidi_tts_conformance.report_html import case_page, write_html
from bidi_tts_conformance.session_audio import SessionAudio
from bidi_tts_conformance.trace import FrameTrace
from tests.toys.good import ServerThread, ToyConfig, ToyContainer

ROOT = Path(__file__).resolve().parents[2]
RATE = 16_000


def tone(n: int, amplitude: int = 8000) -> bytes:
    return struct.pack(f"<{n}h", *(int(amplitude * math.sin(2 * math.pi * 440 * i / RATE)) for i in range(n)))


FRAME = tone(RATE // 10)  # 100 ms


def recorded(late_ms: float = 0.0) -> SessionAudio:
    """Two messages on s1: three 100 ms frames each; the third frame of the second message `late_ms` late."""
    audio = SessionAudio()
    audio.received("s1", protocol.synthesis_start("r1", RATE), FrameKind.TEXT, 0.0)
    for i in range(3):
        audio.received("s1", FRAME, FrameKind.BINARY, 10.0 + i * 50)
    audio.received("s1", protocol.synthesis_complete("r1", 3 * len(FRAME), RATE), FrameKind.TEXT, 200.0)
    audio.received("s1", protocol.synthesis_start("r2", RATE), FrameKind.TEXT, 1000.0)
    audio.received("s1", FRAME, FrameKind.BINARY, 1000.0)
    audio.received("s1", FRAME, FrameKind.BINARY, 1050.0)
    audio.received("s1", FRAME, FrameKind.BINARY, 1200.0 + late_ms)  # playback ends at 1200
    return audio


def test_the_recorded_audio_is_every_pcm_frame_at_the_announced_rate() -> None:
    audio = recorded()
    (pcm,) = audio.with_audio().values()
    assert pcm.sample_rate == RATE and pcm.message_starts == [0, 3] and pcm.pcm == FRAME * 6
    with wave.open(io.BytesIO(pcm.wav())) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (RATE, 1, 2)
        assert w.readframes(w.getnframes()) == FRAME * 6
    assert pcm.message_offsets_s() == [0.0, pytest.approx(0.3)]


def test_an_underrun_is_marked_only_where_the_player_ran_dry() -> None:
    (on_time,) = recorded(late_ms=0.0).with_audio().values()
    assert on_time.underruns() == []  # the second message starts its own playback: no dry span between them
    (late,) = recorded(late_ms=120.0).with_audio().values()
    assert late.underruns() == [(pytest.approx(0.5), pytest.approx(120.0))]


def test_control_frames_without_a_kind_are_told_from_pcm_by_the_rule() -> None:
    audio = SessionAudio()
    audio.received("s1", protocol.synthesis_start("r", RATE).encode(), None, 0.0)  # SageMaker without DataType
    audio.received("s1", b"{" + FRAME[1:], None, 1.0)  # PCM starting with '{' is audio (TTS-CLASSIFY)
    (pcm,) = audio.with_audio().values()
    assert pcm.sample_rate == RATE and len(pcm.frames) == 1


def test_the_audio_kept_per_case_is_bounded() -> None:
    audio = SessionAudio(limit_bytes=len(FRAME) * 2)
    for i in range(5):
        audio.received("s1", FRAME, FrameKind.BINARY, float(i))
    (pcm,) = audio.with_audio().values()
    assert len(pcm.frames) == 2 and pcm.dropped_bytes == 3 * len(FRAME)


def _entry(case_id: str, verdict: Verdict, clauses: tuple[str, ...], seconds: float,
           audio: SessionAudio | None = None) -> Entry:
    trace = FrameTrace()
    if audio is not None:
        trace.audio = audio
    case = Case(case_id, f"case {case_id}", clauses, "an expectation", lambda ctx: None)  # type: ignore[arg-type,return-value]
    entry = Entry.from_result(CaseResult(case, verdict, f"detail of {case_id}", trace=trace),
                              "failed" if verdict is Verdict.FAILED else "passed")
    entry.duration_s = seconds
    return entry


def test_the_case_page_plays_the_recorded_pcm_and_draws_its_underruns() -> None:
    now = utc_now()
    html = case_page(_entry("audio.x", Verdict.OK, ("TTS-STREAM",), 1.0, recorded(late_ms=120.0)),
                     RunInfo({"label": "toy"}, now, now, {}, {}), "../r.html")
    (src,) = re.findall(r"<audio controls[^>]* src='data:audio/wav;base64,([^']+)'", html)
    with wave.open(io.BytesIO(base64.b64decode(src))) as w:
        assert w.readframes(w.getnframes()) == FRAME * 6
    assert html.count("<line class=underrun") == 1 and html.count("<line class=msg") == 1
    assert "ran dry for 120 ms" in html and "1 underruns" in html
    assert f"TTS-STREAM: {CLAUSES['TTS-STREAM']}" in html.replace("&quot;", '"')
    assert "href='../r.html#clause-TTS-STREAM'" in html
    silent = case_page(_entry("http.x", Verdict.OK, ("SM-PING",), 1.0), RunInfo({"label": "toy"}, now, now, {}, {}),
                       "../r.html")
    assert "<audio" not in silent and "Audio received" not in silent


def test_every_clause_a_case_cites_has_its_text() -> None:
    cited = {c for case in REGISTRY for c in case.clauses}
    assert cited <= CLAUSES.keys(), sorted(cited - CLAUSES.keys())


# -- in headless Chromium ------------------------------------------------------------------------
def _chromium() -> str:
    from bidi_tts_loadtest import browser_ttfa

    if not any(map(__import__("shutil").which, ("chromium", "chromium-browser"))):
        pytest.skip("Debian's chromium is not installed (apt-get install chromium); CI installs it")
    pytest.importorskip("playwright.sync_api")
    return browser_ttfa.find_chromium(None)


@pytest.fixture
def report(tmp_path: Path) -> Path:
    entries = [
        _entry("frames.binary.1", Verdict.OK, ("TTS-BINARY-IN",), 0.30, recorded(late_ms=120.0)),
        _entry("audio.order.1", Verdict.FAILED, ("TTS-ORDER",), 2.50),
        _entry("errors.voice.1", Verdict.NON_STRICT, ("TTS-ERROR",), 0.10),
        _entry("health.ping.1", Verdict.OK, ("SM-PING",), 1.20),
        _entry("http.post.1", Verdict.SKIPPED, ("POST-INVOCATIONS",), 0.00),
    ]
    now = utc_now()
    path = tmp_path / "conformance.html"
    write_html(path, entries, RunInfo({"kind": "url", "label": "toy"}, now, now, {}, {}))
    return path


@pytest.mark.timeout(120)
def test_filters_sorting_clause_links_and_the_player_work_in_chromium(report: Path, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from bidi_tts_loadtest.browser_ttfa import CHROMIUM_ARGS

    chromium = _chromium()
    shown = "Array.from(document.querySelectorAll('tr[data-verdict]')).filter(r => !r.hidden)" \
            ".map(r => r.querySelector('code').textContent)"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS, timeout=30_000)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            page.goto(report.as_uri())
            assert len(page.evaluate(shown)) == 5 and page.inner_text("#shown-count") == "5 of 5 cases shown"
            page.uncheck("input[data-verdict='OK']")
            assert page.evaluate(shown) == ["audio.order.1", "errors.voice.1", "http.post.1"]
            page.fill("input[type=search]", "tts-order")  # matches the clause column
            assert page.evaluate(shown) == ["audio.order.1"]
            assert "hide=OK" in page.url and "q=tts-order" in page.url
            page.reload()  # the filter lives in the URL: a reload (or a shared link) keeps it
            assert page.evaluate(shown) == ["audio.order.1"]
            page.fill("input[type=search]", "")
            page.check("input[data-verdict='OK']")
            page.click("table.cases th:text-is('time')")
            assert page.evaluate(shown) == ["http.post.1", "errors.voice.1", "frames.binary.1", "health.ping.1",
                                            "audio.order.1"]
            page.click("table.cases th:text-is('time')")
            assert page.evaluate(shown)[0] == "audio.order.1"
            page.screenshot(path=str(tmp_path / "main.png"), full_page=True)
            page.click("a[href='#clause-TTS-ORDER']")
            assert page.url.endswith("#clause-TTS-ORDER")
            assert page.evaluate("document.querySelector(':target + dd').textContent") == CLAUSES["TTS-ORDER"]

            page.goto((report.parent / "conformance_cases" / "frames.binary.1.html").as_uri())
            decoded = page.evaluate("""async () => {
                const audio = document.querySelector('audio');
                const bytes = await (await fetch(audio.src)).arrayBuffer();
                const ctx = new OfflineAudioContext(1, 1, 16000);
                const buf = await ctx.decodeAudioData(bytes);
                await audio.play();
                await new Promise(r => setTimeout(r, 300));
                return {rate: buf.sampleRate, length: buf.length, first: Array.from(buf.getChannelData(0).slice(0, 64)),
                        playing: !audio.paused, at: audio.currentTime, duration: audio.duration};
            }""")
            page.screenshot(path=str(tmp_path / "case.png"), full_page=True)
        finally:
            browser.close()
    samples = struct.unpack("<64h", FRAME[:128])
    assert decoded["rate"] == RATE and decoded["length"] == 6 * len(FRAME) // 2
    assert decoded["first"] == pytest.approx([s / 32768 for s in samples], abs=1e-4)
    assert decoded["playing"] and decoded["at"] > 0 and decoded["duration"] == pytest.approx(0.6, abs=0.01)


# -- a real run of the suite ----------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_suite_run_puts_each_session_s_audio_on_its_case_page(tmp_path: Path) -> None:
    html = tmp_path / "conformance.html"
    with ServerThread(ToyContainer(ToyConfig(realtime_factor=0.5)).app()) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "conformance/test_cases.py", "-p", "no:cacheprovider", "-q",
             "--container-url", server.url, "--case", "frames.binary.1", "--conformance-html", str(html),
             "--conformance-report", str(tmp_path / "r.json")],
            cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"}, capture_output=True, text=True, timeout=150)
    assert proc.returncode == 0, proc.stdout[-2000:]
    page = (tmp_path / "conformance_cases" / "frames.binary.1.html").read_text()
    (src,) = re.findall(r"src='data:audio/wav;base64,([^']+)'", page)
    with wave.open(io.BytesIO(base64.b64decode(src))) as w:
        assert w.getframerate() == 24000 and w.getnframes() > 2400  # more than 0.1 s of the toy's tone
    assert "<svg class=wave" in page
