"""Every conformance case can fail: for each case id a toy container that breaks the clause the case
is about, and the phrase naming the cause that the failure detail must contain.

Each toy runs in one server; its unrelated cases (`passes`) run first and must still pass on it
(each case is judged on what it is about), then the cases it is the proof for. A case id with no
entry here fails `test_every_case_has_a_toy`, so no case can land without being shown to fail.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from bidi_tts.protocol import BIDI_LABEL
from bidi_tts_conformance.cases import REGISTRY
from bidi_tts_conformance.context import Options
from bidi_tts_conformance.model import CaseResult, Verdict
from bidi_tts_conformance.ping_log import PingLog
from bidi_tts_conformance.runner import run_case
from bidi_tts_conformance.targets import DockerTarget, SageMakerEndpointTarget, Target, wait_ready
from tests.toys import (
    broken,
    broken_input,
    broken_output,
    broken_session,
    busy,
    inbox,
    mutants,
    ping_methods,
    raw_frames,
    sample_defects,
    wrapping,
)
from tests.toys.good import ServerThread, ToyConfig, ToyContainer

PACED = ToyConfig(realtime_factor=0.05)  # 1 s of audio in 50 ms

FAST = Options(silence=1.5, case_timeout=30.0)


@dataclass(frozen=True)
class Toy:
    """A toy container, the target kind it is reached through, and cases that must pass on it."""

    make: Callable[[], ToyContainer]
    passes: tuple[str, ...]
    # "url", "sagemaker" (the real SDK through the local runtime stand-in), "image", "loading" (started
    # by the suite, which records /ping from the start until ready)
    via: str = "url"


@dataclass(frozen=True)
class Proof:
    """Case `toy` is the proof for: its verdict, and a phrase of the detail that names the cause."""

    toy: str
    phrase: str
    verdict: Verdict = Verdict.FAILED


TOYS: dict[str, Toy] = {
    # health
    "ping_503": Toy(broken.PingNeverReadyToy, ("frames.text.1",)),
    "ping_slow": Toy(broken_session.SlowPingToy, ("frames.text.1", "health.accept.1")),
    "accept_slow": Toy(broken.SlowAcceptToy, ("health.ping.1",)),
    "path_header_rejected": Toy(broken_session.PathHeaderRejectedToy, ("frames.text.1", "health.accept.1")),
    "ping_waits_for_model": Toy(broken_session.PingWaitsForModelToy, ("health.ping.1", "frames.text.1")),
    "image_unlabelled": Toy(ToyContainer, ("health.ping.1",), via="image"),
    "loop_blocking": Toy(busy.LoopBlockingToy, ("health.ping.1", "health.accept.1")),
    "ping_get_only": Toy(ping_methods.GetOnlyPingToy, ("health.ping.1",)),
    "post_ping_500": Toy(ping_methods.PostPing500Toy, ("health.ping.1", "health.ping.2")),
    "ping_lies": Toy(sample_defects.PingLiesToy, ("health.ping.1",)),
    "locked_post": Toy(sample_defects.LockedPostToy, ("health.ping.1",)),
    # frames in
    "receive_text_only": Toy(broken.TextOnlyToy, ("frames.text.1", "frames.fragmented.1", "close.explicit.1")),
    "receive_bytes_only": Toy(broken_input.BinaryOnlyToy, ("frames.binary.1", "frames.fragmented.2",
                                                            "close.explicit.2")),
    "frame_per_message": Toy(raw_frames.FramePerMessageToy, ("frames.text.1", "frames.binary.1")),
    "fragment_decode": Toy(raw_frames.FragmentDecodeToy, ("frames.fragmented.1", "frames.fragmented.2")),
    "no_audio_for_short_text": Toy(broken_output.NoAudioForShortTextToy, ("frames.text.1", "audio.order.1")),
    "text_limit_500": Toy(broken_input.SmallTextLimitToy, ("frames.text.1", "errors.text_too_long.1")),
    "ascii_only": Toy(broken_input.AsciiOnlyToy, ("frames.text.1", "frames.fragmented.1")),
    "default_rate_22050": Toy(broken_output.DefaultRate22050Toy, ("audio.format.1", "frames.text.1")),
    "strict_fields": Toy(broken_input.StrictFieldsToy, ("frames.text.1", "frames.minimal.1")),
    # audio out
    "audio_before_start": Toy(broken_output.AudioBeforeStartToy, ("health.ping.1", "close.explicit.2")),
    "stereo_claim": Toy(broken_output.StereoClaimToy, ("frames.text.1", "audio.order.1")),
    "base64_audio": Toy(broken.Base64AudioToy, ("health.ping.1", "close.explicit.2", "audio.order.1",
                                                "audio.sound.1", "session.multi.2")),
    "odd_frames": Toy(broken.OddFramesToy, ("health.ping.1", "close.explicit.2")),
    "never_complete": Toy(broken.NoCompleteToy, ("health.ping.1", "close.explicit.2", "frames.binary.1",
                                                  "audio.sound.1")),
    "wrong_totals": Toy(broken.WrongTotalsToy, ("health.ping.1", "close.explicit.2")),
    "wrong_close_code": Toy(broken.WrongCloseCodeToy, ("session.multi.2", "frames.binary.1")),
    "wrong_duration": Toy(broken_output.WrongDurationToy, ("audio.order.1", "frames.text.1", "session.multi.1")),
    "silent": Toy(broken.SilentToy, ("audio.order.1", "audio.consistent.1", "session.multi.2")),
    "no_streaming": Toy(broken.NoStreamToy, ("audio.order.1", "frames.text.1")),
    "speed_range_narrow": Toy(broken_input.NarrowSpeedToy, ("frames.text.1", "errors.bad_speed.1")),
    "speed_ignored": Toy(broken_output.SpeedIgnoredToy, ("frames.text.1",)),
    "rate_ignored": Toy(broken_output.RateIgnoredToy, ("audio.format.1", "frames.text.1")),
    "wraps_loud": Toy(wrapping.WrappingToy, ("frames.text.1", "audio.sound.1", "audio.samples.1")),
    # sessions
    # Paced at 1/20 of real time (an async sleep per frame): since the toys' tone is numpy, an unpaced toy
    # speaks 8 sentences in ~13 ms and isolation.hol.1 / cancel.1 find nothing left running (NOT-JUDGED).
    "close_after_first": Toy(lambda: broken.CloseAfterFirstToy(PACED),
                             ("frames.text.1", "health.ping.1", "audio.speed.1", "audio.stream.1", "isolation.hol.1")),
    "close_after_10": Toy(broken_session.CloseAfterMessagesToy, ("session.multi.2", "session.multi.1")),
    "lifo": Toy(broken_session.LifoToy, ("frames.text.1", "session.multi.2")),
    "error_then_broken": Toy(broken_session.ErrorThenBrokenToy, ("frames.text.1", "session.multi.1")),
    "request_id_not_echoed": Toy(broken_output.NoEchoRequestIdToy, ("frames.text.1", "audio.order.1")),
    "idle_timeout": Toy(broken_session.IdleTimeoutToy, ("frames.text.1", "session.multi.2")),
    # close
    "ignores_close": Toy(broken.IgnoreCloseToy, ("frames.text.1", "session.multi.1")),
    "text_close_only": Toy(broken_session.TextCloseOnlyToy, ("close.explicit.1", "frames.binary.1")),
    "abandons_on_close": Toy(broken_session.AbandonOnCloseToy, ("close.explicit.1", "frames.text.1")),
    "dies_after_disconnect": Toy(broken_session.BrokenAfterDisconnectToy, ("frames.text.1", "session.multi.1")),
    "cancel_closes": Toy(broken_session.CancelClosesToy, ("frames.text.1", "close.explicit.1")),
    # errors
    "leaks_str_e": Toy(broken.LeakyErrorsToy, ("frames.text.1", "audio.order.1", "errors.invalid_json.1",
                                                "robust.json.3")),
    "missing_error_code": Toy(broken.MissingCodeToy, ("frames.text.1",)),
    "wrong_error_code": Toy(broken.WrongCodeToy, ("frames.text.1",)),
    "closes_on_bad_input": Toy(broken.CloseOnBadInputToy, ("frames.text.1", "close.explicit.1")),
    "lenient_utf8": Toy(raw_frames.LenientTextFramesToy, ("frames.text.1", "errors.invalid_json.1")),
    "repairs_json": Toy(broken_input.RepairsTruncatedJsonToy, ("frames.text.1", "errors.not_an_object.1")),
    "recursion_crash": Toy(broken_input.RecursionCrashToy, ("frames.text.1", "errors.invalid_json.1")),
    "not_an_object_as_invalid_json": Toy(broken_input.NotAnObjectAsInvalidJsonToy, ("frames.text.1",
                                                                                   "errors.invalid_json.1")),
    "loose_types": Toy(broken_input.LooseTypesToy, ("frames.text.1", "robust.types.type")),
    "unchecked_type": Toy(broken_input.UncheckedTypeToy, ("frames.text.1", "close.explicit.1", "cancel.idle.1")),
    "whitespace_text": Toy(broken_input.WhitespaceTextToy, ("frames.text.1", "errors.text_required.1")),
    "nul_crash": Toy(broken_input.ControlCharCrashToy, ("frames.text.1", "robust.text.1")),
    "no_text_limit": Toy(broken_input.NoTextLimitToy, ("frames.text.1", "frames.long.1")),
    "any_voice": Toy(broken.AcceptAnyVoiceToy, ("frames.text.1",)),
    "positive_speed_only": Toy(broken_input.PositiveSpeedOnlyToy, ("frames.text.1", "errors.bad_speed.1")),
    "any_rate": Toy(broken_input.AnyRateToy, ("frames.text.1", "audio.rate.1")),
    "overload_codes": Toy(broken_session.OverloadCodeToy, ("frames.text.1", "session.multi.2")),
    "error_budget": Toy(broken_session.ErrorBudgetToy, ("frames.text.1", "session.reuse.1")),
    # isolation
    "shared_text": Toy(broken_session.SharedTextToy, ("health.ping.1", "frames.text.1")),
    "global_lock": Toy(broken_session.GlobalLockToy, ("frames.text.1", "isolation.concurrent.1", "health.ping.3")),
    "garbage_kills_ping": Toy(broken_session.GarbageKillsPingToy, ("frames.text.1", "health.ping.1")),
    "stalling_worker": Toy(broken_session.StallingWorkerToy, ("frames.text.1", "health.ping.1")),
    # POST /invocations
    "post_octet_stream": Toy(broken_session.PostOctetStreamToy, ("post.wav.1", "post.errors.1")),
    "post_sized_wav": Toy(broken_session.PostSizedWavToy, ("post.pcm.1", "post.errors.1")),
    "post_errors_500": Toy(broken.PostErrors500Toy, ("post.pcm.1", "post.wav.1")),
    "post_buffered": Toy(broken_session.PostBufferedToy, ("post.pcm.1",)),
    # cancel
    "good_without_cancel": Toy(lambda: ToyContainer(PACED), ("cancel.idle.1",)),
    # defects that mutants of the reference container showed passing (issue 23)
    "cancelled_always": Toy(mutants.CancelledAlwaysToy, ("frames.text.1", "session.multi.1")),
    "cancel_without_flag": Toy(mutants.CancelWithoutFlagToy, ("frames.text.1", "audio.order.1")),
    "post_format_401": Toy(mutants.PostFormat401Toy, ("post.pcm.1", "post.wav.1")),
    "queued_cancel_bad_bytes": Toy(lambda: mutants.QueuedCancelToy(bad_bytes=True), ("frames.text.1",)),
    "post_pcm_with_header": Toy(mutants.PostPcmWithWavHeaderToy, ("post.wav.1", "post.errors.1")),
    "takes_after_close": Toy(mutants.TakesMessagesAfterCloseToy, ("close.explicit.1", "frames.text.1")),
    "queued_cancel": Toy(mutants.QueuedCancelToy, ("cancel.1", "cancel.queued.1", "audio.order.1")),
    "ping_500_while_loading": Toy(mutants.LoadingPingToy, ("health.ping.1", "frames.text.1"), via="loading"),
    "inbox_overflow_closes": Toy(lambda: inbox.InboxToy(overflow="close"), ("frames.text.1", "robust.flood.1")),
    # SageMaker transport, through the local runtime stand-in
    "sm_audio_as_text": Toy(broken_output.AudioAsTextFramesToy, ("health.accept.1",), via="sagemaker"),
    "sm_receive_text_only": Toy(broken.TextOnlyToy, ("sagemaker.datatype.1",), via="sagemaker"),
    "sm_wrong_close_code": Toy(broken.WrongCloseCodeToy, ("sagemaker.datatype.1", "sagemaker.datatype.2"),
                               via="sagemaker"),
}

PROOFS: dict[str, Proof] = {
    "health.ping.1": Proof("ping_503", "answered HTTP 503"),
    "health.ping.2": Proof("ping_slow", "GET /ping took"),
    "health.accept.1": Proof("accept_slow", "slow accept"),
    "health.path.1": Proof("path_header_rejected", "HTTP 403"),
    "health.ping.3": Proof("ping_waits_for_model", "during synthesis"),
    "health.label.1": Proof("image_unlabelled", f"{BIDI_LABEL}=None"),
    "health.busy.1": Proof("loop_blocking", "slow accept while busy"),
    "health.ping.post.1": Proof("post_ping_500", "POST /ping answered HTTP 500"),
    "frames.binary.1": Proof("receive_text_only", "binary frame not handled"),
    "frames.text.1": Proof("receive_bytes_only", "text frame not handled"),
    "frames.fragmented.1": Proof("frame_per_message", "fragmented TEXT message not handled"),
    "frames.fragmented.2": Proof("frame_per_message", "fragmented BINARY message not handled"),
    "frames.fragmented.3": Proof("fragment_decode", "fragmented TEXT message not handled"),
    "frames.fragmented.4": Proof("fragment_decode", "fragmented BINARY message not handled"),
    "frames.short.1": Proof("no_audio_for_short_text", "no audio for 'Hi.'"),
    "frames.long.1": Proof("text_limit_500", "not accepted: refused with error text_too_long"),
    "frames.unicode.1": Proof("ascii_only", "refused with error internal"),
    "frames.minimal.1": Proof("default_rate_22050", "defaults announced in synthesis_start are wrong: "
                                                    "sample_rate 22050"),
    "frames.unknown_fields.1": Proof("strict_fields", "refused with error invalid_json"),
    "audio.order.1": Proof("audio_before_start", "outside synthesis_start/synthesis_complete"),
    "audio.format.1": Proof("stereo_claim", "synthesis_start announces channels 2"),
    "audio.binary.1": Proof("base64_audio", "audio inside JSON"),
    "audio.samples.1": Proof("odd_frames", "odd-length audio frames"),
    "audio.consistent.1": Proof("wrong_duration", "but the audio lasts"),
    "audio.sound.1": Proof("silent", "the audio is silent"),
    "audio.stream.1": Proof("no_streaming", "no streaming"),
    "audio.speed.1": Proof("speed_range_narrow", "refused with error bad_speed"),
    "audio.rate.1": Proof("rate_ignored", "synthesis_start announces 24000"),
    "audio.wrap.1": Proof("wraps_loud", "TTS-AUDIO: a wrapped sample at"),
    "session.multi.1": Proof("close_after_first", "message 2 of 2 failed (the container closed the session with 1000"),
    "session.multi.2": Proof("close_after_first", "message 2 of 5 failed (the container closed the session with 1000"),
    "session.multi.3": Proof("close_after_10", "message 11 of 20 failed (the container closed the session with 1000"),
    "session.pipelined.1": Proof("lifo", "not answered in send order"),
    "session.reuse.1": Proof("error_then_broken", "the session stopped working"),
    "session.request_id.1": Proof("request_id_not_echoed", "request_id not echoed: synthesis_start carries "
                                                           "'server-chosen-id'"),
    "session.idle.1": Proof("idle_timeout", "unexpectedly closed the session with 1001"),
    "close.explicit.1": Proof("ignores_close", "close request ignored"),
    "close.explicit.2": Proof("text_close_only", "close request ignored"),
    "close.synthesizing.1": Proof("abandons_on_close", "not finished after the close request (the container closed the "
                                                        "session with 1000"),
    "close.client.1": Proof("dies_after_disconnect", "after a client left mid-message, a new session failed: "
                                                      "a valid message was refused with error internal"),
    "errors.invalid_utf8.1": Proof("lenient_utf8", "invalid UTF-8: the message was accepted and synthesized"),
    "errors.invalid_json.1": Proof("closes_on_bad_input", "closed the session with 1011"),
    "errors.invalid_json.2": Proof("repairs_json", "truncated JSON in a BINARY frame: the message was accepted"),
    "errors.not_an_object.1": Proof("wrong_error_code", "answered with error code 'internal', expected "
                                                        "not_an_object"),
    "errors.text_required.1": Proof("wrong_error_code", "answered with error code 'internal', expected "
                                                        "text_required"),
    "errors.message.1": Proof("leaks_str_e", "error messages are not for people: plain text: the error message "
                                             "\"'text'\" is a bare exception string"),
    "errors.text_too_long.1": Proof("no_text_limit", "2 MB of text: the message was accepted and synthesized"),
    "errors.unknown_voice.1": Proof("any_voice", "voice zz_nobody: the message was accepted and synthesized"),
    "errors.bad_speed.1": Proof("missing_error_code", "missing error code"),
    "errors.bad_sample_rate.1": Proof("any_rate", "sample_rate 12345: the message was accepted"),
    "errors.unknown_type.1": Proof("unchecked_type", "type \"dance\": the message was accepted"),
    "errors.busy.1": Proof("overload_codes", "under load a valid message got error overloaded"),
    "isolation.concurrent.1": Proof("shared_text", "sessions got each other's audio"),
    "isolation.neighbour.1": Proof("garbage_kills_ping", "/ping answered 500 after a misbehaving session"),
    "isolation.hol.1": Proof("global_lock", "head-of-line blocking: session B waited for session A's whole message"),
    # The only sign is the good session's reply timing out: the detail names no neighbour.
    "isolation.slow_reader.1": Proof("stalling_worker", "no synthesis_start"),
    "post.pcm.1": Proof("post_octet_stream", "Content-Type 'application/octet-stream'"),
    "post.wav.1": Proof("post_sized_wav", "a streamed WAV uses 0xFFFFFFFF"),
    "post.errors.1": Proof("post_errors_500", "HTTP 500"),
    "post.stream.1": Proof("post_buffered", "the response is buffered, not streamed"),
    "cancel.1": Proof("cancel_closes", "closed the session with 1000"),
    "cancel.idle.1": Proof("cancel_closes", "an idle cancel: the container closed the session with 1000"),
    "close.after.1": Proof("takes_after_close", "a message sent after the close request was synthesized"),
    "cancel.queued.1": Proof("queued_cancel_bad_bytes", "message 2 of 2 (cancelled synthesis_complete) reports "
                                                        "audio_bytes=-1 but carried 0 bytes"),
    "sagemaker.datatype.1": Proof("sm_audio_as_text", "audio arrived with DataType UTF8 instead of BINARY"),
    "sagemaker.datatype.2": Proof("sm_receive_text_only", "DataType unset (BINARY) was not handled"),
    "sagemaker.close.1": Proof("sm_wrong_close_code", "the stream ended: the container closed the session with 1011"),
    "robust.utf8.1": Proof("lenient_utf8", "invalid UTF-8 in a BINARY frame: the message was accepted"),
    "robust.utf8.2": Proof("lenient_utf8", "invalid UTF-8 in a TEXT frame: the message was accepted"),
    "robust.json.1": Proof("repairs_json", "truncated JSON: the message was accepted"),
    "robust.json.2": Proof("recursion_crash", "closed the session with 1011"),
    "robust.json.3": Proof("not_an_object_as_invalid_json", "answered with error code 'invalid_json', "
                                                            "expected not_an_object"),
    "robust.types.text": Proof("loose_types", "text=42: the message was accepted"),
    "robust.types.voice": Proof("loose_types", "voice=['af_heart']: the message was accepted"),
    "robust.types.speed": Proof("loose_types", "speed='1.0': the message was accepted"),
    "robust.types.sample_rate": Proof("loose_types", "sample_rate='24000': the message was accepted"),
    "robust.types.type": Proof("unchecked_type", "type=42: the message was accepted"),
    "robust.text.1": Proof("whitespace_text", "whitespace-only text: the message was accepted"),
    "robust.text.2": Proof("nul_crash", "closed the session with 1011"),
    "robust.text.3": Proof("no_text_limit", "200,000 characters of text: the message was accepted"),
    "robust.size.1": Proof("no_text_limit", "an 8 MB message: the message was accepted"),
    "robust.voice.1": Proof("any_voice", "voice 'zz_nobody': the message was accepted"),
    "robust.speed.1": Proof("positive_speed_only", "speed Infinity: the message was accepted"),
    "robust.speed.2": Proof("positive_speed_only", "speed 11: the message was accepted"),
    "robust.rate.1": Proof("any_rate", "sample_rate 12345: the message was accepted"),
    "robust.type.1": Proof("unchecked_type", "type 'speak': the message was accepted"),
    "robust.binary.1": Proof("closes_on_bad_input", "closed the session with 1011"),
    "robust.flood.1": Proof("overload_codes", "a flooded valid message got error rate_limited"),
    "robust.session.long.1": Proof("error_budget", "closed the session with 1008"),
    "robust.flood.2": Proof("inbox_overflow_closes", "closed the session with 1011"),
    "health.ping.loading.1": Proof("ping_500_while_loading", "/ping answered HTTP 500 in"),
    "isolation.slow_reader.2": Proof("locked_post", "stalled beside a POST /invocations whose response is not read"),
    "health.ping.ready.1": Proof("ping_lies", "/ping answered 200 (ready) while the container cannot synthesize"),
}

# More proofs, by other toys breaking the same clause another way: (toy, case id, phrase).
ALSO_FAILED: list[tuple[str, str, str]] = [
    ("never_complete", "audio.order.1", "but no synthesis_complete"),
    ("ping_waits_for_model", "health.busy.1", "/ping failing while busy: /ping unanswered after"),
    ("wrong_totals", "audio.consistent.1", "reports audio_bytes="),
    ("wrong_close_code", "close.explicit.1", "wrong close code 1011"),
    ("wrong_close_code", "close.explicit.2", "wrong close code 1011"),
    ("cancelled_always", "audio.order.1", "though nothing was cancelled"),
    ("cancel_without_flag", "cancel.1", 'does not say "cancelled": true'),
    ("post_format_401", "post.errors.1", "format 'mp3': HTTP 401"),
    ("post_pcm_with_header", "post.pcm.1", "starts with a WAV header"),
]

# Optional clauses: the verdict a toy without them gets (not a failure).
NON_STRICT: dict[str, tuple[str, str]] = {
    "cancel.1": ("good_without_cancel", "cancel not supported (optional)"),
    "audio.speed.1": ("speed_ignored", "speed seems ignored"),
    "health.ping.post.1": ("ping_get_only", "POST /ping answered HTTP 405: only GET /ping is served"),
}

# Case id -> why no toy can make it fail. Keep it empty where at all possible.
EXEMPT: dict[str, str] = {}

# Cases proven in a module of their own, with its own toys (the content cases need speaking toys and
# a recognizer): the coverage check reads that module's proof table for each id.
PROVEN_ELSEWHERE: dict[str, Path] = {
    cid: Path(__file__).with_name("test_content_cases.py")
    for cid in ("content.intelligible.1", "content.order.1", "content.session.1", "content.concurrent.1")
} | {cid: Path(__file__).with_name("test_sample_defects.py") for cid in ("stop.client.1", "stop.sigterm.1")
     } | {cid: Path(__file__).with_name("test_voice_cases.py") for cid in ("voice.path.1", "voice.prompt.1")
          } | {cid: Path(__file__).with_name("test_admission_cases.py")
               for cid in ("errors.busy.2", "post.busy.1", "post.capacity.1")}


def coverage_problems(case_ids: set[str], proofs: dict[str, Proof], exempt: dict[str, str]) -> list[str]:
    """What keeps the table from proving that every case id can fail (empty when nothing)."""
    problems = []
    for cid, module in PROVEN_ELSEWHERE.items():
        if f'"{cid}": "' not in module.read_text():
            problems.append(f"{cid}: no failure phrase for it in {module.name}")
    if missing := sorted(case_ids - set(proofs) - set(exempt) - set(PROVEN_ELSEWHERE)):
        problems.append(f"cases with no toy proving they can fail (add one to PROOFS): {missing}")
    if both := sorted(set(proofs) & set(exempt)):
        problems.append(f"cases both proven and exempt: {both}")
    listed = set(proofs) | set(exempt) | set(NON_STRICT) | set(PROVEN_ELSEWHERE) | {cid for _, cid, _ in ALSO_FAILED}
    if stale := sorted(listed - case_ids):
        problems.append(f"entries for case ids that do not exist: {stale}")
    for cid, proof in proofs.items():
        if proof.toy not in TOYS:
            problems.append(f"{cid}: unknown toy {proof.toy!r}")
        elif cid in TOYS[proof.toy].passes:
            problems.append(f"{cid}: listed both as failing and as passing on {proof.toy!r}")
        if not proof.phrase.strip():
            problems.append(f"{cid}: an empty phrase would let any failure (a timeout) count")
    return problems


def test_every_case_has_a_toy() -> None:
    """A new case cannot land without a toy that makes it fail (or a stated exemption)."""
    assert coverage_problems({case.id for case in REGISTRY}, PROOFS, EXEMPT) == []


def test_coverage_check_catches_a_case_without_a_toy_and_an_empty_phrase() -> None:
    ids = {case.id for case in REGISTRY}
    assert "frames.new.1" in coverage_problems(ids | {"frames.new.1"}, PROOFS, EXEMPT)[0]
    emptied = {**PROOFS, "audio.sound.1": Proof("silent", " ")}
    assert coverage_problems(ids, emptied, EXEMPT) == ["audio.sound.1: an empty phrase would let any "
                                                       "failure (a timeout) count"]


@contextmanager
def _fake_docker(monkeypatch: pytest.MonkeyPatch, labels: dict[str, str]) -> Iterator[None]:
    """What DockerTarget.image_labels calls (docker.from_env().images.get(image).labels), faked."""
    image = SimpleNamespace(labels=labels)
    client = SimpleNamespace(images=SimpleNamespace(get=lambda name: image), ping=lambda: True)
    monkeypatch.setitem(sys.modules, "docker", SimpleNamespace(from_env=lambda **_: client))
    yield


@contextmanager
def _served(toy: Toy, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Target]:
    container_started = time.monotonic()
    container = toy.make()
    server = (raw_frames.RawServerThread(container) if isinstance(container, raw_frames.RawFramesToy)
              else ServerThread(container.app()))
    with server:
        try:
            if toy.via == "url":
                yield Target(kind="url", base_url=server.url)
            elif toy.via == "loading":
                log = PingLog(started_at=container_started)
                wait_ready(server.url, 10.0, lambda _: None, server.thread.is_alive, log)
                yield Target(kind="process", base_url=server.url, ping_log=log)
            elif toy.via == "image":
                with _fake_docker(monkeypatch, {}):
                    yield DockerTarget(image="toy-without-label:latest", base_url=server.url)
            else:
                with _sagemaker_target(server.url, monkeypatch, tmp_path) as target:
                    yield target
        finally:
            if halt := getattr(container, "halt", None):  # a toy that would hold its server's shutdown
                halt()


@contextmanager
def _sagemaker_target(upstream: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Target]:
    from tests.sagemaker.helpers import start_gateway, use_dummy_aws_credentials

    use_dummy_aws_credentials(monkeypatch, tmp_path)
    with start_gateway(upstream, tmp_path / "certs") as gateway:
        yield SageMakerEndpointTarget(endpoint_name="toy", endpoint_url=gateway.url, ca_file=gateway.ca_file)


def _shown(results: dict[str, CaseResult]) -> str:
    return "\n".join(f"  {cid}: {r.verdict} ({r.duration_s:.1f} s): {r.detail[:300]}" for cid, r in results.items())


@pytest.mark.timeout(120)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # awscrt, as in tests/sagemaker
@pytest.mark.parametrize("name", sorted(TOYS), ids=str)
def test_toy_fails_its_cases_and_passes_the_rest(name: str, monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    toy = TOYS[name]
    proofs = {cid: p for cid, p in PROOFS.items() if p.toy == name}
    others = {cid: phrase for cid, (t, phrase) in NON_STRICT.items() if t == name}
    also = {cid: Proof(name, phrase) for t, cid, phrase in ALSO_FAILED if t == name}
    proofs.update(also)
    results: dict[str, CaseResult] = {}
    with _served(toy, monkeypatch, tmp_path) as target:
        # Unrelated cases first: some toys break for good once their defect has been triggered.
        for cid in [*toy.passes, *others, *proofs]:
            results[cid] = run_case(REGISTRY[cid], target, FAST)
    shown = _shown(results)
    for cid in toy.passes:
        assert results[cid].verdict is Verdict.OK, f"{cid} should pass on {name}:\n{shown}"
    for cid, phrase in others.items():
        assert results[cid].verdict is Verdict.NON_STRICT, f"{cid} should be NON-STRICT on {name}:\n{shown}"
        assert phrase in results[cid].detail, f"{cid}: the detail should say {phrase!r}:\n{shown}"
    for cid, proof in proofs.items():
        assert results[cid].verdict is proof.verdict, f"{cid} should be {proof.verdict} on {name}:\n{shown}"
        assert proof.phrase in results[cid].detail, f"{cid}: the detail should name {proof.phrase!r}:\n{shown}"
        assert "report this as a suite bug" not in results[cid].detail, shown


@pytest.mark.timeout(120)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_good_toy_passes_the_sagemaker_and_image_cases(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The cases a plain URL run skips (tests/conformance_suite/test_plugin.py runs the rest)."""
    results: dict[str, CaseResult] = {}
    with ServerThread(ToyContainer().app()) as server:
        with _fake_docker(monkeypatch, {BIDI_LABEL: "true"}):
            image = DockerTarget(image="toy-with-label:latest", base_url=server.url)
            results["health.label.1"] = run_case(REGISTRY["health.label.1"], image, FAST)
        with _sagemaker_target(server.url, monkeypatch, tmp_path) as target:
            for case in REGISTRY.select(["sagemaker.*"]):
                results[case.id] = run_case(case, target, FAST)
    assert all(r.verdict is Verdict.OK for r in results.values()), _shown(results)
    assert len(results) >= 4

