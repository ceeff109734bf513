"""The dialects by name (--dialect), with one clear error for a name that is not one."""

from __future__ import annotations

from bidi_tts.dialects.base import Dialect
from bidi_tts.dialects.kokoro_sample import KokoroSampleDialect
from bidi_tts.dialects.vllm_omni import VllmOmniDialect

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
