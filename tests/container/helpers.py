"""Test helpers for the reference container: a fake synthesizer, servers, and a WebSocket reader."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from websockets.sync.client import ClientConnection, connect

from bidi_tts.protocol import WS_PATH
from reference_container.app import create_app
from reference_container.settings import Settings
from tests.toys.good import ServerThread


class FakeSynth:
    """A deterministic synthesizer: `chunks` chunks of 0.1 s of tone per unit, `delay_s` each."""

    name = "fake"
    sample_rate = 24_000

    def __init__(self, *, chunks: int = 2, delay_s: float = 0.0, fail_on: str | None = None) -> None:
        self.chunks = chunks
        self.delay_s = delay_s
        self.fail_on = fail_on
        self.calls: list[str] = []
        self.chunks_made = 0
        self.lock = threading.Lock()

    @property
    def voices(self) -> frozenset[str]:
        return frozenset({"af_heart", "am_adam"})

    def load(self) -> None:
        pass

    def synthesize(self, text: str, voice: str, speed: float) -> Iterator[np.ndarray]:
        with self.lock:
            self.calls.append(text)
        if self.fail_on is not None and self.fail_on in text:
            raise ValueError("secret internal detail")
        t = np.arange(2400, dtype=np.float32) / self.sample_rate
        for _ in range(self.chunks):
            if self.delay_s:
                time.sleep(self.delay_s)
            with self.lock:
                self.chunks_made += 1
            yield 0.3 * np.sin(2 * np.pi * 220 * t)


def serve_app(synth: Any, **overrides: Any) -> ServerThread:
    """A ServerThread (lifespan on) around create_app with a given synthesizer."""
    settings = Settings(**{"warmup": False, **overrides})
    server = ServerThread(create_app(settings, synth))
    server.server.config.lifespan = "on"
    server.server.config.ws = "websockets-sansio"
    server.server.config.ws_max_size = settings.max_message_bytes
    return server


def ws_connect(base_url: str) -> ClientConnection:
    """Open the bidirectional-streaming route of a container at http://host:port."""
    return connect(base_url.replace("http://", "ws://") + WS_PATH, max_size=None, open_timeout=10)


@dataclass
class Received:
    """Everything one session received, in order: ("text", dict) or ("binary", bytes)."""

    frames: list[tuple[str, Any]] = field(default_factory=list)
    close_code: int | None = None
    arrival: list[float] = field(default_factory=list)

    def controls(self) -> list[dict[str, Any]]:
        return [f for kind, f in self.frames if kind == "text"]

    def types(self) -> list[str]:
        return [f["type"] if kind == "text" else "audio" for kind, f in self.frames]

    def audio(self, request_id: str | None = None) -> bytes:
        out, current = b"", None
        for kind, f in self.frames:
            if kind == "text" and f["type"] == "synthesis_start":
                current = f["request_id"]
            elif kind == "binary" and (request_id is None or current == request_id):
                out += f
        return out


def read_until(ws: ClientConnection, done: Any, timeout: float = 120.0) -> Received:
    """Read frames until `done(received)` is true, the socket closes, or `timeout` passes."""
    got = Received()
    deadline = time.monotonic() + timeout
    while not done(got):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"no end after {timeout} s; got {got.types()[-10:]}")
        try:
            frame = ws.recv(timeout=remaining)
        except TimeoutError:
            continue
        except Exception:  # closed: record the code and stop
            got.close_code = ws.close_code
            return got
        got.arrival.append(time.monotonic())
        if isinstance(frame, str):
            got.frames.append(("text", json.loads(frame)))
        else:
            got.frames.append(("binary", frame))
    return got


def completes(n: int) -> Any:
    """A `done` predicate: n synthesis_complete or error frames seen."""
    return lambda got: sum(1 for c in got.controls() if c["type"] in ("synthesis_complete", "error")) >= n


def until_closed(got: Received) -> bool:
    return False
