"""STAND-IN for the sample's `tts_orpheus.snac_decode.SnacDecoder`: `decode_frames(codes) -> bytes`.

Returns 16-bit PCM at 24 kHz, 2048 samples for each whole frame of 7 codes, looked up from the
stand-in vLLM's Kokoro audio (bench/sample/standins/snac_codec.py). The real decoder runs the SNAC
24 kHz model on the GPU; how many samples it returns for a 28-code window is its own choice.
"""

from __future__ import annotations

from bench.sample.standins import snac_codec


class SnacDecoder:
    def __init__(self, model_path: str = "hubertsiuzdak/snac_24khz", device: str = "cuda") -> None:
        self.model_path = model_path

    def decode_frames(self, codes: list[int]) -> bytes:
        return snac_codec.decode(codes)
