"""Argument types the load tools share: numbers that must be positive, or zero or more, with argparse's own
one-line error on anything else."""

from __future__ import annotations

import argparse
from typing import Any


def _number(kind: type, test: Any, wanted: str) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not test(value):
            raise argparse.ArgumentTypeError(f"{text} must be {wanted}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


positive_float = _number(float, lambda v: v > 0 and v != float("inf"), "a positive number")
non_negative_float = _number(float, lambda v: 0 <= v < float("inf"), "zero or more")
positive_int = _number(int, lambda v: v > 0, "a positive whole number")
non_negative_int = _number(int, lambda v: v >= 0, "zero or more")
