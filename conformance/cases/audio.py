"""audio.*: what comes back: order, format, whole samples, consistent totals, real sound, streaming."""

from __future__ import annotations

from bidi_tts.protocol import CHANNELS, ENCODING, SAMPLE_WIDTH_BYTES
from bidi_tts.session import ProtocolViolation
from conformance.cases._util import SENTENCE, SHORT, rms
from conformance.context import CaseContext
from conformance.model import CaseFailed, Outcome, case, informational, non_strict, ok

MIN_RMS = 30.0  # s16 units: well below quiet speech (hundreds to thousands), well above dither
# Plausible speech: 66 characters a second is far too fast, 4 a second far too slow.
MIN_S_PER_CHAR, MAX_S_PER_CHAR = 0.015, 0.25
STREAM_FIRST = "Good morning."
STREAM_REST = (" The weather today is mild, with a light breeze from the west and a few clouds."
               " Later this evening, expect clear skies and a cool night across the whole region.")


@case("audio.order.1", "frames of one message come as synthesis_start, audio..., synthesis_complete",
      clauses=["TTS-ORDER"], expect="start, at least one audio frame, complete; nothing else in between")
async def order(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    reply = await conv.say(SENTENCE)
    if reply.started is None:
        raise CaseFailed("synthesis_complete without synthesis_start", expected="synthesis_start first")
    return ok(f"{len(reply.frame_kinds)} frames")


@case("audio.format.1", "synthesis_start announces the requested rate, pcm_s16le, mono",
      clauses=["TTS-AUDIO"], expect='{"sample_rate": requested, "encoding": "pcm_s16le", "channels": 1}')
async def announced_format(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    reply = await conv.say(SHORT)
    assert reply.started is not None
    start = reply.started.control
    wanted = {"sample_rate": ctx.options.sample_rate, "encoding": ENCODING, "channels": CHANNELS}
    wrong = {k: start.get(k) for k, v in wanted.items() if start.get(k) != v}
    if wrong:
        raise CaseFailed(f"synthesis_start announces {wrong}", expected=str(wanted), actual=str(wrong))
    return ok()


@case("audio.binary.1", "audio travels only as BINARY frames of raw PCM, never as JSON or base64",
      clauses=["TTS-AUDIO", "SM-FRAMES-OUT", "TTS-CLASSIFY"],
      expect="every frame between start and complete is BINARY")
async def binary_audio(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    rid = await conv.synthesize(SENTENCE)
    try:
        reply = await conv.wait_reply(rid)
    except CaseFailed:
        raise
    stray = [v for v in conv.session.violations if v.clause in ("TTS-CLASSIFY", "TTS-AUDIO")]
    text_frames = [k for k in reply.frame_kinds[1:-1] if k == "text"]
    if stray or text_frames:
        sample = next((line for line in conv.log if '"audio"' in line or "base64" in line or
                       '"data"' in line), conv.log[1] if len(conv.log) > 1 else "")
        why = stray[0].description if stray else f"{len(text_frames)} TEXT frames between start and complete"
        raise CaseFailed(f"audio inside JSON/TEXT frames instead of BINARY PCM: {why}; e.g. {sample[:100]}",
                         expected="BINARY frames of raw s16le PCM", actual=why)
    if not reply.audio:
        raise CaseFailed("no BINARY audio frame at all", expected="BINARY audio frames", actual="none")
    conv.raise_violations()
    return ok(f"{len(reply.frame_kinds) - 2} BINARY audio frames")


def _whole_sample_violations(violations: list[ProtocolViolation]) -> list[ProtocolViolation]:
    return [v for v in violations if "whole number" in v.description]


@case("audio.samples.1", "every audio frame holds a whole number of 16-bit samples (even length)",
      clauses=["TTS-AUDIO"], expect="every BINARY frame has an even number of bytes")
async def whole_samples(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    rid = await conv.synthesize(SENTENCE)
    reply = await conv.wait_reply(rid)
    sizes = reply.record.frame_sizes
    odd = [s for s in sizes if s % SAMPLE_WIDTH_BYTES]
    if odd:
        raise CaseFailed(f"odd-length audio frames: {len(odd)} of {len(sizes)} (e.g. {odd[0]} bytes)",
                         expected="even frame lengths", actual=f"{odd[0]} bytes")
    await conv.complete(rid)
    return ok(f"{len(sizes)} frames, sizes {min(sizes)}..{max(sizes)} bytes" if sizes else "")


@case("audio.consistent.1", "synthesis_complete's audio_bytes and duration_s match the audio received",
      clauses=["TTS-ORDER", "TTS-AUDIO"],
      expect="audio_bytes == bytes received; duration_s == audio_bytes / (2 * sample_rate)")
async def consistent_totals(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    rid = await conv.synthesize(SENTENCE)
    reply = await conv.wait_reply(rid)
    if reply.completed is None:
        raise CaseFailed(f"refused with {reply.error.code if reply.error else '?'}")
    reported = reply.completed.audio_bytes_reported
    if reported != len(reply.audio):
        raise CaseFailed(f"synthesis_complete reports audio_bytes={reported}, {len(reply.audio)} arrived",
                         expected=str(len(reply.audio)), actual=str(reported))
    duration = reply.completed.duration_s
    truth = len(reply.audio) / (SAMPLE_WIDTH_BYTES * CHANNELS * reply.record.sample_rate)
    if duration is None or abs(duration - truth) > max(0.01, 0.01 * truth):
        raise CaseFailed(f"duration_s={duration!r} but the audio lasts {truth:.3f} s",
                         expected=f"{truth:.3f}", actual=repr(duration))
    conv.raise_violations()
    return ok(f"{reported} bytes, {truth:.2f} s")


@case("audio.sound.1", "the audio is not silent and its length is plausible for the text",
      clauses=["TTS-AUDIO"],
      expect=f"RMS above {MIN_RMS:.0f}; {MIN_S_PER_CHAR}-{MAX_S_PER_CHAR} s of audio per character")
async def real_sound(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    reply = await conv.say(SENTENCE)
    level = rms(reply.audio)
    seconds = reply.record.audio_seconds
    if level < MIN_RMS:
        raise CaseFailed(f"the audio is silent (RMS {level:.1f} over {seconds:.2f} s)",
                         expected=f"RMS > {MIN_RMS:.0f}", actual=f"RMS {level:.1f}")
    low, high = len(SENTENCE) * MIN_S_PER_CHAR, len(SENTENCE) * MAX_S_PER_CHAR
    if not low <= seconds <= high:
        raise CaseFailed(f"{seconds:.2f} s of audio for {len(SENTENCE)} characters is not plausible speech",
                         expected=f"{low:.2f}-{high:.2f} s", actual=f"{seconds:.2f} s")
    return ok(f"RMS {level:.0f}, {seconds:.2f} s")


@case("audio.stream.1", "streaming: the first audio of a multi-sentence message leaves before the last "
      "sentence is synthesized", clauses=["TTS-STREAM"],
      expect="time to first audio of 3 sentences <= 2x that of the first sentence alone (+0.1 s)")
async def streaming(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    await conv.say(STREAM_FIRST)  # warm-up: first-message costs must not count
    alone = await conv.say(STREAM_FIRST)
    whole = await conv.say(STREAM_FIRST + STREAM_REST)
    t1, tm, total = alone.record.ttfa_s, whole.record.ttfa_s, whole.record.complete_s
    assert t1 is not None and tm is not None and total is not None
    shown = (f"first audio after {tm * 1000:.0f} ms for 3 sentences, {t1 * 1000:.0f} ms for the first "
             f"sentence alone; complete after {total * 1000:.0f} ms")
    if tm > 2 * t1 + 0.1:
        hint = " (all audio arrived at the end)" if tm >= 0.9 * total else ""
        raise CaseFailed(f"no streaming: audio is sent only after the whole message is synthesized{hint}: "
                         f"{shown}", expected="first audio about as early as for one sentence", actual=shown)
    return ok(shown)


@case("audio.speed.1", "speeds 0.5 and 2.0 are accepted; the faster one is shorter",
      clauses=["TTS-AUDIO"], expect="both synthesized; audio at 2.0 shorter than at 0.5")
async def speeds(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    slow = await conv.say(SHORT, speed=0.5)
    fast = await conv.say(SHORT, speed=2.0)
    s, f = slow.record.audio_seconds, fast.record.audio_seconds
    if not f < s:
        return non_strict(f"speed seems ignored: {s:.2f} s at 0.5, {f:.2f} s at 2.0")
    return ok(f"{s:.2f} s at 0.5, {f:.2f} s at 2.0")


@case("audio.rate.1", "an optional sample rate (16000 Hz): used as announced, or refused with "
      "bad_sample_rate", clauses=["TTS-AUDIO", "TTS-ERROR"],
      expect="synthesis_start announces 16000 and the audio length matches, or error bad_sample_rate")
async def other_rate(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    rid = await conv.synthesize(SHORT, sample_rate=16_000)
    reply = await conv.wait_reply(rid)
    if reply.error is not None:
        if reply.error.code != "bad_sample_rate":
            raise CaseFailed(f"16000 Hz refused with {reply.error.code!r}", expected="bad_sample_rate",
                             actual=str(reply.error.code))
        return informational("16000 Hz not supported (optional)")
    conv.raise_violations()
    assert reply.started is not None
    if reply.started.control.get("sample_rate") != 16_000:
        raise CaseFailed(f"asked for 16000 Hz, synthesis_start announces {reply.started.sample_rate}",
                         expected="16000", actual=str(reply.started.sample_rate))
    return ok(f"{reply.record.audio_seconds:.2f} s at 16000 Hz")
