"""Each broken vLLM-Omni toy (tests/toys/omni_broken.py) really shows its one defect to a raw client, and
the base toy, given the same probe, does not."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.toys.good import ServerThread
from tests.toys.omni_broken import (
    OMNI_PATH,
    OmniBase64AudioToy,
    OmniBaseToy,
    OmniCloseAfterFlushToy,
    OmniDropsBufferToy,
    OmniNoAudioDoneToy,
    OmniTextOnlyToy,
)

CONFIG = {"type": "session.config", "response_format": "pcm", "stream_audio": True,
          "split_granularity": "sentence"}


@contextmanager
def session(toy: OmniBaseToy) -> Iterator[ClientConnection]:
    with ServerThread(toy.app()) as srv:
        with connect(srv.url.replace("http://", "ws://") + OMNI_PATH, max_size=None, open_timeout=5) as ws:
            yield ws


def flush(ws: ClientConnection, *texts: str, binary: bool = False) -> None:
    for msg in ({"type": "input.text", "text": t} for t in texts):
        ws.send(json.dumps(msg).encode() if binary else json.dumps(msg))
    done = json.dumps({"type": "input.done"})
    ws.send(done.encode() if binary else done)


def read_flush(ws: ClientConnection, timeout: float = 5) -> tuple[list[Any], int | None]:
    """Frames (dicts for TEXT, bytes for BINARY) up to session.done; and the close code if it closed."""
    frames: list[Any] = []
    try:
        while True:
            frame = ws.recv(timeout=timeout)
            frames.append(json.loads(frame) if isinstance(frame, str) else frame)
            if isinstance(frames[-1], dict) and frames[-1]["type"] == "session.done":
                return frames, None
    except ConnectionClosed:
        return frames, ws.close_code


def types(frames: list[Any]) -> list[str]:
    return [f["type"] if isinstance(f, dict) else "audio" for f in frames]


def test_base_toy_serves_binary_frames_two_flushes_with_audio_done_and_binary_audio() -> None:
    with session(OmniBaseToy()) as ws:
        ws.send(json.dumps(CONFIG).encode())
        flush(ws, "One. ", "Two.", binary=True)
        first, closed = read_flush(ws)
        flush(ws, "Three.")
        second, closed2 = read_flush(ws)
    assert closed is None and closed2 is None
    assert types(first).count("audio.done") == 2 and "audio" in types(first)
    assert [f["sentence_text"] for f in first if isinstance(f, dict) and f["type"] == "audio.start"] == \
        ["One.", "Two."]
    assert second[-1] == {"type": "session.done", "utterance_index": 1, "total_sentences": 1}


def test_text_only_toy_dies_on_a_binary_frame_but_serves_text() -> None:
    with session(OmniTextOnlyToy()) as ws:
        ws.send(json.dumps(CONFIG))
        flush(ws, "Text frames.")
        frames, closed = read_flush(ws)
        assert closed is None and frames[-1]["type"] == "session.done"
        try:
            flush(ws, "Binary frames.", binary=True)
        except ConnectionClosed:  # the toy may die on the text frame before the flush frame is sent
            pass
        frames, closed = read_flush(ws)
    assert closed is not None and closed != 1000 and "audio" not in types(frames)


def test_close_after_flush_toy_closes_after_session_done() -> None:
    with session(OmniCloseAfterFlushToy()) as ws:
        ws.send(json.dumps(CONFIG))
        flush(ws, "Hello.")
        frames, _ = read_flush(ws)
        assert frames[-1]["type"] == "session.done"
        try:
            frame = ws.recv(timeout=5)
        except ConnectionClosed:
            frame = None
    assert frame is None and ws.close_code == 1000


def test_no_audio_done_toy_sends_audio_but_no_audio_done() -> None:
    with session(OmniNoAudioDoneToy()) as ws:
        ws.send(json.dumps(CONFIG))
        flush(ws, "One. Two.")
        frames, _ = read_flush(ws)
    assert types(frames).count("audio.start") == 2 and "audio" in types(frames)
    assert "audio.done" not in types(frames)


def test_base64_toy_sends_audio_as_json_never_binary() -> None:
    with session(OmniBase64AudioToy()) as ws:
        ws.send(json.dumps(CONFIG))
        flush(ws, "Hello there.")
        frames, _ = read_flush(ws)
    assert "audio" not in types(frames)
    chunks = [f for f in frames if isinstance(f, dict) and f["type"] == "audio.chunk"]
    assert chunks and all(f["audio_b64"] for f in chunks)


def test_drops_buffer_toy_speaks_only_the_last_input_text() -> None:
    with session(OmniDropsBufferToy()) as ws:
        ws.send(json.dumps(CONFIG))
        flush(ws, "First part. ", "Second part.")
        frames, _ = read_flush(ws)
    spoken = [f["sentence_text"] for f in frames if isinstance(f, dict) and f["type"] == "audio.start"]
    assert spoken == ["Second part."]
    assert frames[-1]["total_sentences"] == 1
