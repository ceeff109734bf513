"""How the stand-in vLLM and the stand-in SNAC decoder pass audio through Orpheus's audio tokens.

Orpheus emits 7 SNAC codes (12 bits each) per frame of 2048 samples at 24 kHz (about 85 ms). The
stand-in vLLM cannot carry audio in 84 bits a frame, so it keeps each utterance's Kokoro audio here
(one process) and sends codes that name it: codes 0-1 the utterance, 2-3 the frame, 4-6 zero. The
stand-in decoder looks the frame's samples up. Token ids follow tts_orpheus.prompt's mapping:
id = 128266 + code + position * 4096, sent as `<custom_token_{id - 128256}>`.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np

FRAME_SAMPLES = 2048
CODES_PER_FRAME = 7
_AUDIO_TOKEN_OFFSET = 128266
_CUSTOM_TOKEN_BASE = 128256
_lock = threading.Lock()
_ids = itertools.count(1)
_audio: dict[int, np.ndarray] = {}


def register(audio: np.ndarray) -> int:
    """Keep an utterance's float32 audio; its id for `frame_codes`."""
    with _lock:
        uid = next(_ids) % (1 << 24)
        _audio[uid] = audio
        if len(_audio) > 4096:  # forget the oldest utterances
            for old in sorted(_audio)[:1024]:
                del _audio[old]
        return uid


def frame_count(audio: np.ndarray) -> int:
    return -(-len(audio) // FRAME_SAMPLES)


def frame_codes(uid: int, frame: int) -> list[int]:
    return [uid & 0xFFF, uid >> 12, frame & 0xFFF, frame >> 12, 0, 0, 0]


def tokens_text(codes: list[int], start_position: int) -> str:
    """`<custom_token_N>` text for codes whose first one sits at `start_position` of the stream."""
    ids = (_AUDIO_TOKEN_OFFSET + c + ((start_position + i) % CODES_PER_FRAME) * 4096 for i, c in enumerate(codes))
    return "".join(f"<custom_token_{token_id - _CUSTOM_TOKEN_BASE}>" for token_id in ids)


def decode(codes: list[int]) -> bytes:
    """16-bit PCM for whole frames of codes (a frame naming unknown audio decodes to nothing)."""
    out = []
    for at in range(0, len(codes) - CODES_PER_FRAME + 1, CODES_PER_FRAME):
        c = codes[at:at + CODES_PER_FRAME]
        uid, frame = c[0] | (c[1] << 12), c[2] | (c[3] << 12)
        with _lock:
            audio = _audio.get(uid)
        if audio is not None:
            out.append(audio[frame * FRAME_SAMPLES:(frame + 1) * FRAME_SAMPLES])
    if not out:
        return b""
    return (np.clip(np.concatenate(out), -1.0, 1.0) * 32767).astype("<i2").tobytes()
