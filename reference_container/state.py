"""The container's shared runtime state: settings, synthesizer, scheduler and readiness."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass, field

from bidi_tts import protocol
from reference_container.drain import Drain
from reference_container.logs import kv
from reference_container.scheduler import Scheduler
from reference_container.settings import Settings
from reference_container.synthesizers.base import Synthesizer, warm_up
from reference_container.unit_cost import UnitCost, calibrate

log = logging.getLogger(__name__)


@dataclass(eq=False)
class AppState:
    """Built once per process; the model loads in the background while the server already listens."""

    settings: Settings
    synth: Synthesizer
    scheduler: Scheduler = field(init=False)
    ready: asyncio.Event = field(init=False)
    failed: bool = False
    limits: protocol.Limits = field(init=False)
    # What a unit costs on this machine: measured after the warm-up, then followed unit by unit
    # (reference_container.unit_cost); the units of every message are planned from it.
    cost: UnitCost = field(default_factory=UnitCost)
    drain: Drain = field(default_factory=Drain)  # the open sessions and POST streams, for a stop

    def __post_init__(self) -> None:
        self.scheduler = Scheduler(
            self.synth.synthesize, workers=self.settings.synth_workers, max_messages=self.settings.max_queue,
            policy=self.settings.scheduler_policy, sample_rate=self.synth.sample_rate,
            deadline_margin_s=self.settings.deadline_margin_s,
            # A benchmark hook, not an operator setting: loadtest.capacity reads the pick counts here.
            stats_path=os.environ.get("SCHEDULER_STATS_FILE") or None,
        )
        self.ready = asyncio.Event()
        self.limits = self.settings.limits(frozenset())

    async def load(self) -> None:
        """Load the model and run the warm-up synthesis off the loop, then turn /ping to 200."""
        started = time.perf_counter()
        try:
            await asyncio.to_thread(self.synth.load)
            voices = self.synth.voices
            if self.settings.default_voice not in voices:
                raise RuntimeError(f"default voice {self.settings.default_voice!r} is not among the voices")
            self.limits = self.settings.limits(voices)
            audio_s = 0.0
            if self.settings.warmup:
                audio_s = await asyncio.to_thread(warm_up, self.synth, self.settings.default_voice)
                self.cost = await asyncio.to_thread(calibrate, self.synth, self.settings.default_voice)
                # The deadline policy starts from the same measurement, not from its guess.
                self.scheduler.estimate.rtf = self.cost.rtf
        except Exception:
            self.failed = True
            log.exception("event=model_load_failed backend=%s", self.settings.backend)
            raise
        self.ready.set()
        log.info(kv(event="ready", backend=self.synth.name, voices=len(voices),
                    load_s=time.perf_counter() - started, warmup_audio_s=audio_s,
                    unit_call_s=self.cost.call_s, unit_char_s=self.cost.char_s,
                    speech_s_per_char=self.cost.speech_s_per_char, rtf=self.cost.rtf))
