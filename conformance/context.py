"""What a case check receives: the target's transport factory, the options, timeouts, cleanup."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from bidi_tts.protocol import DEFAULT_SAMPLE_RATE, DEFAULT_VOICE
from bidi_tts.transports.base import ConnectError, Transport
from conformance.driver import Conversation
from conformance.model import CaseFailed, CaseSkipped
from conformance.targets import Target


@dataclass(frozen=True, slots=True)
class Options:
    """Knobs shared by every case (pytest options --voice, --sample-rate, --*-timeout)."""

    voice: str = DEFAULT_VOICE
    sample_rate: int = DEFAULT_SAMPLE_RATE
    reply_timeout: float = 60.0  # the longest wait for any one expected frame
    case_timeout: float = 300.0  # the whole case


class CaseContext:
    """Per-case handle on the target. Everything it opens is closed by :meth:`aclose`."""

    def __init__(self, target: Target, options: Options) -> None:
        self.target = target
        self.options = options
        self._transports: list[Transport] = []
        self._http: httpx.AsyncClient | None = None

    @property
    def kind(self) -> str:
        return self.target.kind

    @property
    def base_url(self) -> str | None:
        return self.target.base_url

    async def connect(self, **opts: Any) -> Transport:
        """Open a raw transport; a refused connection fails the case with the reason."""
        try:
            transport = await self.target.connect(**opts)
        except ConnectError as exc:
            raise CaseFailed(f"cannot open a session: {exc}", expected="a session",
                             actual="refused") from None
        self._transports.append(transport)
        return transport

    async def conversation(self, **opts: Any) -> Conversation:
        """Open a session wrapped in a checking Conversation."""
        transport = await self.connect(**opts)
        return Conversation(transport, reply_timeout=self.options.reply_timeout,
                            voice=self.options.voice, sample_rate=self.options.sample_rate)

    def http(self) -> httpx.AsyncClient:
        """An HTTP client on the container's base URL (skips the case when there is none)."""
        if self.target.base_url is None:
            raise CaseSkipped(f"needs plain HTTP to the container; the {self.kind} target has none")
        if self._http is None:
            self._http = httpx.AsyncClient(base_url=self.target.base_url,
                                           timeout=self.options.reply_timeout)
        return self._http

    async def aclose(self) -> None:
        for transport in self._transports:
            try:
                await transport.close()
            except Exception:  # already gone: cleanup is best effort
                pass
        self._transports.clear()
        if self._http is not None:
            await self._http.aclose()
            self._http = None
