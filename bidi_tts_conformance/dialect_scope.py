"""Which cases make sense in which dialect (docs/dialects.md): the one table the runner consults.

A case listed for a dialect is NOT-JUDGED there, with the reason given here; the case files stay as
they are. Each entry is a glob over case ids and why the dialect's wire cannot express what the case
judges (never "it fails there": a case that can be judged is run and may fail).
"""

from __future__ import annotations

import fnmatch

from bidi_tts.dialects import DEFAULT_DIALECT

_CODES = "it judges the coded error of each bad input (TTS-ERROR's stable codes); vLLM-Omni's errors carry none"

NOT_JUDGED_IN: dict[str, tuple[tuple[str, str], ...]] = {
    "vllm-omni": (
        ("errors.*", "vLLM-Omni's error frame has a message and no code; the case judges TTS-ERROR's stable codes"),
        ("session.reuse.1", "it checks the coded error of each bad input; vLLM-Omni's errors carry no code"),
        ("robust.session.long.1", "it expects a coded error for each bad message; vLLM-Omni's errors carry no code"),
        ("cancel.*", "vLLM-Omni has no cancel message (a client can only flush with input.done or close)"),
        ("audio.rate.1", "vLLM-Omni's session.config has no sample_rate: the model's native rate comes back"),
        ("audio.consistent.1", "vLLM-Omni says no duration_s (and audio_bytes only as audio.done's total_bytes)"),
        ("session.request_id.1", "vLLM-Omni has no request ids: the client side supplies them, so there is "
                                 "nothing of the container's to judge"),
        ("frames.unknown_fields.1", "the dialect sends only vLLM-Omni's own fields, so the kokoro-sample "
                                    "fields under test never reach the container"),
        ("frames.fragmented.3", "its cut points are chosen inside the kokoro-sample body, which vLLM-Omni "
                                "never receives (frames.fragmented.1 and .2 judge fragmentation here)"),
        ("frames.fragmented.4", "its cut points are chosen inside the kokoro-sample body, which vLLM-Omni "
                                "never receives (frames.fragmented.1 and .2 judge fragmentation here)"),
        ("health.path.1", "it names the kokoro-sample default route in the SageMaker path header"),
        ("isolation.slow_reader.1", "its stalled reader speaks kokoro-sample on a raw socket, below the dialect"),
        ("robust.utf8.1", _CODES), ("robust.json.*", _CODES), ("robust.types.*", _CODES),
        ("robust.text.1", _CODES), ("robust.text.2", _CODES), ("robust.text.3", _CODES), ("robust.size.1", _CODES),
        ("robust.voice.1", _CODES), ("voice.*", _CODES), ("robust.speed.*", _CODES), ("robust.type.1", _CODES),
        ("robust.binary.1", _CODES), ("robust.flood.2", _CODES),
        ("robust.rate.1", "vLLM-Omni's session.config has no sample_rate, so a bad one never reaches it"),
        ("isolation.slow_reader.2", "its stalled reader is a POST /invocations, which belongs to the "
                                    "kokoro-sample protocol"),
        ("post.*", "POST /invocations belongs to the kokoro-sample protocol; vLLM-Omni's route is a WebSocket"),
    ),
    "kokoro-sample": (),  # every case is written in kokoro-sample
}


def not_judged_because(case_id: str, dialect: str = DEFAULT_DIALECT) -> str | None:
    """Why `case_id` is not judged in `dialect`, or None when it is."""
    for glob, why in NOT_JUDGED_IN.get(dialect, ()):
        if fnmatch.fnmatchcase(case_id, glob):
            return f"not judged in the {dialect} dialect: {why}"
    return None
