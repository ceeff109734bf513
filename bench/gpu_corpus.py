"""The four sentences of the retired bench/gpu_bench.py: the H200 thread figures behind the h200-eager
profiles were measured on them, and the GPU bundle's corpus (bench/gpu_bundle.py) starts with them."""

from __future__ import annotations

SENTENCE_60 = "The quick brown fox jumps over the lazy dog near the bank."  # ~60 phonemes
SENTENCES = [
    SENTENCE_60,
    "Your order shipped yesterday from our Denver warehouse.",
    "It should arrive by Thursday, and you will get a text when it is out for delivery.",
    "Is there anything else you would like me to look into today?",
]
