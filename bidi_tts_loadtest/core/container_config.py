"""What a capacity sweep compares: container configurations, from the command line to the container's options.

``[BACKEND[=PROFILE]:]SCHEDULER[/WxT][/batchMS][/whole]`` (``--configs``), or ``--schedulers`` times
``--layouts``; each becomes the reference container's own command-line options (:meth:`Config.args`).
A timed backend's profile is checked here, before any container starts (:func:`check_profile`).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

SCHEDULERS = ("fifo", "round-robin", "deadline")


@dataclass(slots=True)
class Layout:
    workers: int
    threads: int

    @classmethod
    def parse(cls, text: str) -> Layout:
        try:
            workers, threads = (int(x) for x in text.lower().split("x"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"layout {text!r}: expected WORKERSxTHREADS, e.g. 2x1") from None
        if workers < 1 or threads < 1:
            raise argparse.ArgumentTypeError(f"layout {text!r}: both numbers must be at least 1")
        return cls(workers, threads)

    def __str__(self) -> str:
        return f"{self.workers}x{self.threads}"


@dataclass(slots=True, frozen=True)
class Config:
    """One container configuration: `[BACKEND[=PROFILE]:]SCHEDULER[/WxT][/batchMS][/whole]`.

    `WxT`: W synthesis workers with T onnxruntime threads (default 1x2); `batchMS`: cross-session
    batching with that window (``--batch-window-ms``); `whole`: no streaming within a message (the
    first sentence is not cut at a clause: ``--first-clause-chars 0``; under LLM-paced load every
    message is one sentence, so each message is one unit). BACKEND is ``onnx`` or ``timed``
    (``timed=PROFILE`` names the profile; plain ``timed`` takes ``--timed-profile``).
    """

    scheduler: str
    layout: Layout
    backend: str = "onnx"
    profile: str | None = None
    batch_ms: float = 0.0
    whole: bool = False

    @classmethod
    def parse(cls, text: str, backend: str = "onnx", profile: str | None = None) -> Config:
        spec = text
        if ":" in spec:
            head, spec = spec.split(":", 1)
            backend, _, named = head.partition("=")
            profile = named or profile
        if backend not in ("onnx", "timed"):
            raise argparse.ArgumentTypeError(f"config {text!r}: backend must be onnx or timed")
        if backend == "timed" and not profile:
            raise argparse.ArgumentTypeError(f"config {text!r}: a timed backend needs a profile "
                                             "(timed=NAME:... or --timed-profile)")
        scheduler, *rest = spec.split("/")
        if scheduler not in SCHEDULERS:
            raise argparse.ArgumentTypeError(f"config {text!r}: scheduler must be one of {', '.join(SCHEDULERS)}")
        layout, batch_ms, whole = Layout(1, 2), 0.0, False
        for part in rest:
            if part == "whole":
                whole = True
            elif part.startswith("batch"):
                try:
                    batch_ms = float(part[5:])
                except ValueError:
                    raise argparse.ArgumentTypeError(f"config {text!r}: expected batchMS, e.g. batch5") from None
                if not 0 < batch_ms <= 1000:
                    raise argparse.ArgumentTypeError(f"config {text!r}: the batch window must be 0-1000 ms")
            else:
                layout = Layout.parse(part)
        return cls(scheduler, layout, backend, profile if backend == "timed" else None, batch_ms, whole)

    @property
    def name(self) -> str:
        name = f"{self.scheduler} {self.layout}"
        if self.batch_ms:
            name += f" batch{self.batch_ms:g}"
        if self.whole:
            name += " whole"
        if self.backend == "timed":
            name = f"timed:{Path(self.profile or '').stem} {name}"
        return name

    def args(self) -> list[str]:
        """The container's command-line options for this configuration."""
        args = ["--backend", self.backend, "--scheduler", self.scheduler, "--synth-workers", str(self.layout.workers),
                # Capacity is measured by latency, not by refusals: admit every message.
                "--max-queue", "100000"]
        if self.backend == "timed":
            args += ["--timed-profile", self.profile or ""]
        else:
            args += ["--onnx-threads", str(self.layout.threads)]
        if self.batch_ms:
            args += ["--batch-window-ms", f"{self.batch_ms:g}"]
        if self.whole:
            args += ["--first-clause-chars", "0"]
        return args


def check_profile(spec: str) -> str | None:
    """Why the timed profile ``spec`` cannot load (one line), or None (also when the container is not installed)."""
    try:
        from reference_container.synthesizers.timed_profile import ProfileError, load_profile
    except ImportError:  # the load test installed without the container: the container will say it
        return None
    try:
        load_profile(spec)
    except ProfileError as exc:
        return str(exc)
    return None
