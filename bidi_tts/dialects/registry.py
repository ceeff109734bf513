"""The dialects by name (--dialect), with one clear error for a name that is not one."""

from __future__ import annotations

from bidi_tts.dialects.base import Dialect, Translator
from bidi_tts.dialects.kokoro_sample import KokoroSampleDialect
from bidi_tts.dialects.vllm_omni import VllmOmniDialect
from bidi_tts.protocol import WS_PATH

DEFAULT_DIALECT = "kokoro-sample"
DIALECTS: dict[str, Dialect] = {d.name: d for d in (KokoroSampleDialect(), VllmOmniDialect())}


class UnknownDialect(ValueError):
    pass


def dialect_named(name: str) -> Dialect:
    """The dialect called `name`; UnknownDialect (one line, listing the names) otherwise."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise UnknownDialect(f"unknown dialect {name!r}: choose one of {', '.join(DIALECTS)}") from None


class BadRoute(ValueError):
    pass


class _Rerouted(Dialect):
    """A dialect served on another route: e.g. vLLM-Omni's wire behind a SageMaker relay that takes it
    on /invocations-bidirectional-stream (AWS's Voxtral relay), where no invocation-path header is set."""

    def __init__(self, inner: Dialect, ws_path: str) -> None:
        self._inner = inner
        self.name = inner.name
        self.summary = inner.summary
        self.ws_path = ws_path
        self.invocation_path = None if ws_path == WS_PATH else ws_path.lstrip("/")

    def translator(self) -> Translator:
        return self._inner.translator()

    @property
    def is_identity(self) -> bool:
        return self._inner.is_identity


def dialect_at(name: str, ws_path: str | None = None) -> Dialect:
    """The dialect called `name`, on its own route or on `ws_path` (--ws-path); UnknownDialect or
    BadRoute (one line) otherwise."""
    dialect = dialect_named(name)
    if ws_path is None or ws_path == dialect.ws_path:
        return dialect
    if not ws_path.startswith("/") or any(c in ws_path for c in "?# "):
        raise BadRoute(f"--ws-path must be a path starting with '/', without query or spaces (got {ws_path!r})")
    return _Rerouted(dialect, ws_path)
