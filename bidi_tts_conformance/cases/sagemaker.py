"""sagemaker.*: what only the SageMaker transport can see (DataType, ModelStreamError)."""

from __future__ import annotations

from bidi_tts.frames import FrameKind
from bidi_tts_conformance.cases._util import SHORT, TINY
from bidi_tts_conformance.context import CaseContext
from bidi_tts_conformance.diagnose import describe_close
from bidi_tts_conformance.failures import CaseFailed
from bidi_tts_conformance.model import Outcome, Requires, case, ok

ONLY = [Requires.SAGEMAKER]


@case("sagemaker.datatype.1", "responses carry DataType=UTF8 for control and DataType=BINARY for audio",
      clauses=["SM-FRAMES-OUT", "TTS-AUDIO"], expect="start/complete UTF8, audio BINARY", requires=ONLY)
async def response_datatype(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    reply = await conv.wait_reply(await conv.synthesize(SHORT), lenient=True)
    kinds = reply.frame_kinds
    if "?" in kinds:
        raise CaseFailed("response PayloadParts without a DataType", expected="UTF8/BINARY",
                         actual=str(kinds))
    shown = ", ".join("UTF8" if k == "text" else "BINARY" for k in kinds)
    if any(k != "binary" for k in kinds[1:-1]):
        raise CaseFailed(f"audio arrived with DataType UTF8 instead of BINARY: {shown}",
                         expected="UTF8, BINARY..., UTF8", actual=shown)
    if kinds[0] != "text" or kinds[-1] != "text":
        raise CaseFailed(f"control frames arrived with DataType BINARY instead of UTF8: {shown}",
                         expected="UTF8, BINARY..., UTF8", actual=shown)
    return ok(f"{len(kinds)} parts")


@case("sagemaker.datatype.2", "messages with DataType=UTF8 and with DataType unset are both handled",
      clauses=["SM-FRAMES-IN", "TTS-BINARY-IN"], expect="both synthesized", requires=ONLY)
async def request_datatype(ctx: CaseContext) -> Outcome:
    for data_type in (FrameKind.TEXT, None):
        conv = await ctx.conversation(data_type=data_type)
        try:
            await conv.say(TINY, kind=data_type, lenient=True)
        except CaseFailed as exc:
            label = "UTF8" if data_type else "unset (BINARY)"
            raise CaseFailed(f"a message with DataType {label} was not handled: {exc.detail}",
                             expected="synthesis", actual=exc.actual) from None
        finally:
            await conv.close()
    return ok()


@case("sagemaker.close.1", 'the container\'s close reaches the client as a ModelStreamError with code 1000',
      clauses=["SM-CLOSE", "TTS-CLOSE"], expect="stream ends with close code 1000", requires=ONLY)
async def model_stream_error(ctx: CaseContext) -> Outcome:
    conv = await ctx.conversation()
    await conv.say(TINY, lenient=True)
    await conv.close_request(kind=None)
    closed = await conv.wait_closed()
    if closed.code != 1000:
        raise CaseFailed(f"the stream ended: the container {describe_close(closed)}", expected="1000",
                         actual=str(closed.code))
    return ok()
