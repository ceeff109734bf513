"""The JSON summary of a run (``--summary-json``), built from a merged LatencyRecorder."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from bidi_tts.metrics import LatencyRecorder, summarize
from bidi_tts_loadtest.run.slo import Slo

#: Series names the users record (values in ms unless stated).
TTFA, TTFA_FROM_SEND, COMPLETE, GAP = "ttfa_ms", "ttfa_from_send_ms", "complete_ms", "gap_ms"
TURN_TTFA = "turn_ttfa_ms"
TTFA_AUDIBLE = "ttfa_audible_ms"
RTF, UNDERRUNS, STALL, MESSAGE_OK, SESSION_FAIL, VIOLATIONS, WRAPS = (
    "rtf", "underruns", "stall_ms", "message_ok", "session_failure", "violations", "wrapped_samples")
CONTENT_CHECKED, CONTENT_ERROR, CONTENT_CAUSE = "content_checked", "content_error", "content_cause:"
CONTENT_SKIPPED = "content_skipped"

#: Sums over the run that the summary reports under the key, from the recorder series of the value.
COUNTERS: dict[str, str] = {"underruns": UNDERRUNS, "violations": VIOLATIONS, "wrapped_samples": WRAPS}

#: Session outcomes, as users record them in each session's "outcome".
COMPLETED, FAILED, CUT = "completed", "failed", "cut"

DEFINITIONS = {
    "percentiles": "exact, every sample kept; linear interpolation as numpy.percentile's default",
    "ttfa_ms": "first AUDIO frame minus the moment the container could start the message: its send, "
               "or the previous message's synthesis_complete on the same session if later",
    "ttfa_audible_ms": "the first sample at or above -40 dBFS, played by a player that starts at the first "
                       "AUDIO frame, minus the same start as ttfa_ms (ttfa_ms plus the audio's leading "
                       "silence and any stall before it)",
    "ttfa_from_send_ms": "first AUDIO frame minus the send, including queueing behind the session's "
                         "previous message",
    "turn_ttfa_ms": "first AUDIO frame of a turn minus the start of the simulated LLM answer",
    "complete_ms": "synthesis_complete minus the same start as ttfa_ms",
    "gap_ms": "time between consecutive AUDIO frames of a message",
    "underruns": "a player starting at the first audio frame of a message runs dry before the next frame",
    "rtf": "complete time per second of audio received",
    "wrapped_samples": "samples that wrapped around (a jump from near +32767 to near -32768 or back, "
                       "bidi_tts.audio.find_wraps; TTS-AUDIO), in every message's audio",
    "errors": "failed messages (error frame, timeout, stream closed) plus sessions that failed outside "
              "a message",
    "goodput": "share of completed and failed sessions meeting every per-session SLO (cut ones excluded)",
    "sessions": "sessions started that ended during the run: completed + failed + cut",
    "sessions_cut": "sessions still running when the run ended (stopped, not failed)",
    "failures": "failed sessions by cause: credentials, region, bad target, refused, stream error, timeout",
    "content_errors": "turns heard (--verify-audio-every) with a sentence dropped, repeated, swapped or cut "
                      "off, or too many wrong words; content_causes counts them by cause; content_skipped: "
                      "sampled turns left unheard because the recognizer was busy",
}


def build_summary(
    recorder: LatencyRecorder, slo: Slo, *, since: float | None = None, until: float | None = None
) -> dict[str, Any]:
    """Summary of what `recorder` holds (optionally only samples taken in [since, until))."""
    w = {"since": since, "until": until}

    def stats(name: str) -> dict[str, Any]:
        return summarize(recorder.values(name, **w))

    oks = recorder.values(MESSAGE_OK, **w)
    session_failures = recorder.count(SESSION_FAIL, **w)
    errors = sum(1 for v in oks if v == 0) + session_failures
    attempted = len(oks) + session_failures
    lo = float("-inf") if since is None else since
    hi = float("inf") if until is None else until
    sessions = [s for s in recorder.sessions if lo <= s.get("at", 0.0) < hi]
    outcomes = Counter(s.get("outcome", COMPLETED if not s.get("failure") else FAILED) for s in sessions)
    judged = [s for s in sessions if s.get("outcome") != CUT]
    good = sum(1 for s in judged if slo.session_ok(s))
    failures = Counter(s.get("cause") or "stream error" for s in sessions
                       if s.get("outcome", FAILED if s.get("failure") else COMPLETED) == FAILED)
    summary: dict[str, Any] = {
        "sessions": len(sessions),
        "sessions_completed": outcomes[COMPLETED],
        "sessions_failed": outcomes[FAILED],
        "sessions_cut": outcomes[CUT],
        "failures": dict(sorted(failures.items())),
        "messages": len(oks),
        "errors": errors,
        "error_rate": errors / attempted if attempted else 0.0,
        **{key: int(recorder.total(series, **w)) for key, series in COUNTERS.items()},
        "underrun_stall_ms": recorder.total(STALL, **w),
        "ttfa_ms": stats(TTFA),
        "ttfa_audible_ms": stats(TTFA_AUDIBLE),
        "ttfa_from_send_ms": stats(TTFA_FROM_SEND),
        "turn_ttfa_ms": stats(TURN_TTFA),
        "complete_ms": stats(COMPLETE),
        "gap_ms": stats(GAP),
        "rtf": stats(RTF),
        "sessions_meeting_slo": good,
        "goodput": good / len(judged) if judged else None,
        "content_checked": recorder.count(CONTENT_CHECKED, **w),
        "content_errors": int(recorder.total(CONTENT_ERROR, **w)),
        "content_skipped": int(recorder.total(CONTENT_SKIPPED, **w)),
        "content_causes": {n[len(CONTENT_CAUSE):]: recorder.count(n, **w) for n in recorder.names()
                           if n.startswith(CONTENT_CAUSE)},
    }
    broken = slo.broken(summary)
    summary["slo"] = slo.as_dict()
    summary["slo_broken"] = broken
    summary["slo_passed"] = not broken
    summary["definitions"] = DEFINITIONS
    return summary


def write_summary(summary: dict[str, Any], path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n", encoding="utf-8")
