"""Toys for a container whose pace changes after the suite calibrated on it (issue 32: the sample's
chatterbox and vLLM proxies on a loaded 2-core machine). Sine-tone stand-ins, not the sample's code; the
delays are made up, chosen to exceed the calibration's 2 s floor on silence by a little, so that each
situation happens within a test's seconds.

- :class:`SlowsDownToy` is quick for the calibration's three messages, then (as a machine that got
  loaded) holds every message's first audio back `delay_s` after its synthesis_start: a good container,
  only slower than it was measured.
- :class:`AnswersOnlyCalibrationToy` answers the calibration's own texts at once and never answers any
  other text (a model that hangs on the cases' texts): quick on 'Hi.', broken on the cases. With
  `holds_s`, each text it does not answer keeps its one model lock that long (the case's own unfinished
  work, which makes the first probe after the case slow though the container's pace did not change).
"""

from __future__ import annotations

import asyncio
import contextlib

from starlette.websockets import WebSocket

from bidi_tts import protocol
from bidi_tts_conformance.calibration import GAP_TEXT, PROBE_TEXT
from tests.toys.good import ToyConfig, ToyContainer

CALIBRATION_MESSAGES = 3  # calibration.calibrate sends 'Hi.', 'Hi.' and GAP_TEXT


class SlowsDownToy(ToyContainer):
    def __init__(self, delay_s: float = 2.4, quick_messages: int = CALIBRATION_MESSAGES) -> None:
        super().__init__(ToyConfig())
        self.delay_s = delay_s
        self.quick_messages = quick_messages
        self.messages = 0
        self.delayed = 0  # messages whose first audio was held back, for the tests

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        self.messages += 1
        await ws.send_text(protocol.synthesis_start(request.request_id, request.sample_rate))
        if self.messages > self.quick_messages:
            self.delayed += 1
            await asyncio.sleep(self.delay_s)
        total = 0
        # The client may have given up during the delay: what it left is dropped, as a container would.
        with contextlib.suppress(Exception):
            async for chunk in self.synth.stream(request):
                await ws.send_bytes(chunk)
                total += len(chunk)
            await ws.send_text(protocol.synthesis_complete(request.request_id, total, request.sample_rate))


class AnswersOnlyCalibrationToy(ToyContainer):
    answered_texts = frozenset({PROBE_TEXT, GAP_TEXT})

    def __init__(self, holds_s: float = 0.0) -> None:
        super().__init__(ToyConfig())
        self.holds_s = holds_s
        self.lock = asyncio.Lock()
        self.ignored = 0  # messages never answered, for the tests

    async def synthesize(self, ws: WebSocket, request: protocol.SynthesizeRequest) -> None:
        if request.text not in self.answered_texts:
            self.ignored += 1
            if self.holds_s:
                asyncio.get_running_loop().create_task(self._hold())
            return
        async with self.lock:
            await super().synthesize(ws, request)

    async def _hold(self) -> None:
        async with self.lock:
            await asyncio.sleep(self.holds_s)
