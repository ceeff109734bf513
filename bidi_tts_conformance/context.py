"""What a case check receives: the target's transport factory, the options, timeouts, cleanup."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import httpx

from bidi_tts.dialects import DEFAULT_DIALECT, Translator
from bidi_tts.protocol import DEFAULT_SAMPLE_RATE, DEFAULT_VOICE
from bidi_tts.session import Rule
from bidi_tts.transports.base import ConnectError, Transport
from bidi_tts.transports.dialect import DialectTransport
from bidi_tts_conformance.diagnose import describe_connect_error
from bidi_tts_conformance.driver import EVERY_RULE, Conversation, Notes
from bidi_tts_conformance.failures import CaseFailed, CaseSkipped
from bidi_tts_conformance.targets import Target
from bidi_tts_conformance.trace import EVENT, FrameTrace, TracingTransport, http_hooks


@dataclass(frozen=True, slots=True)
class Options:
    """Knobs shared by every case (pytest options --voice, --sample-rate, --*-timeout)."""

    voice: str = DEFAULT_VOICE
    sample_rate: int = DEFAULT_SAMPLE_RATE
    silence: float = 60.0  # the longest silence while an expected frame is due (--reply-timeout)
    case_timeout: float = 300.0  # the whole case
    end_silence: float | None = None  # see Calibration.end_silence (None: silence)
    end_silence_one: float | None = None  # see Calibration.end_silence_one
    dialect: str = DEFAULT_DIALECT  # --dialect: the wire protocol the sessions speak (docs/dialects.md)


class CaseContext:
    """Per-case handle on the target. Everything it opens is closed by :meth:`aclose`; every frame
    its sessions and HTTP requests carry is recorded in :attr:`trace` (bounded; for the case page)."""

    def __init__(self, target: Target, options: Options, *, focus: Collection[Rule] = EVERY_RULE) -> None:
        self.target = target
        self.options = options
        self.focus = frozenset(focus)
        self.notes = Notes()
        self.trace = FrameTrace()
        self.left_work_running = False  # a session was closed with a message still unfinished
        self._transports: list[Transport] = []
        self._translators: list[Translator] = []
        self._conversations: list[Conversation] = []
        self._http: httpx.AsyncClient | None = None

    @property
    def kind(self) -> str:
        return self.target.kind

    @property
    def base_url(self) -> str | None:
        return self.target.base_url

    async def connect(self, **opts: Any) -> Transport:
        """Open a raw transport; a refused connection fails the case with the reason."""
        session = self.trace.new_session()
        where = self.target.label + (f" with headers {opts['headers']}" if opts.get("headers") else "")
        self.trace.add(session, EVENT, "connect", None, f"opening a session to {where}")
        try:
            inner = await self.target.connect(**{**opts, "wire": True})
        except ConnectError as exc:
            why = describe_connect_error(exc)
            self.trace.add(session, EVENT, "connect", None, f"refused: {why}")
            raise CaseFailed(f"cannot open a session: {why}", expected="a WebSocket session",
                             actual=why) from None
        self.trace.add(session, EVENT, "connect", None, "open")
        # The trace records the wire (the dialect's own frames); the case speaks through the translator.
        transport = self.target.speaking(TracingTransport(inner, self.trace, session), wire=bool(opts.get("wire")))
        if isinstance(transport, DialectTransport):
            self._translators.append(transport.translator)
        self._transports.append(transport)
        return transport

    def dialect_findings(self) -> list[tuple[str, str]]:
        """Breaks of the dialect's own wire rules its sessions saw: (TTS clause, what happened)."""
        return [finding for translator in self._translators for finding in translator.findings]

    async def conversation(self, *, patience: float = 1.0, **opts: Any) -> Conversation:
        """Open a session wrapped in a checking Conversation. `patience` scales the silence allowed
        (a case that loads the container with N sessions at once gives each N times as long)."""
        transport = await self.connect(**opts)
        end, end_one = self.options.end_silence, self.options.end_silence_one
        conv = Conversation(transport, silence=self.options.silence * patience,
                            voice=self.options.voice, sample_rate=self.options.sample_rate,
                            focus=self.focus, notes=self.notes,
                            end_silence=None if end is None else end * patience,
                            end_silence_one=None if end_one is None else end_one * patience)
        self._conversations.append(conv)
        return conv

    def http(self) -> httpx.AsyncClient:
        """An HTTP client on the container's base URL (skips the case when there is none)."""
        if self.target.base_url is None:
            raise CaseSkipped(f"needs plain HTTP to the container; the {self.kind} target has none")
        if self._http is None:
            self._http = httpx.AsyncClient(base_url=self.target.base_url, timeout=self.options.silence,
                                           event_hooks=http_hooks(self.trace))
        return self._http

    async def aclose(self) -> None:
        # A message still unfinished when the client leaves may keep the container busy.
        if any(conv.unfinished and (conv.closed is None or conv.closed_by_client) for conv in self._conversations):
            self.left_work_running = True
        for transport in self._transports:
            try:
                await transport.close()
            except Exception:  # already gone: cleanup is best effort
                pass
        self._transports.clear()
        self._conversations.clear()
        if self._http is not None:
            await self._http.aclose()
            self._http = None
