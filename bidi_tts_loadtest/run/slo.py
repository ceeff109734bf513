"""Service-level objectives: what a run (and each session) must meet, and the verdict."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class SloOption:
    """One ``--slo-*`` option: the Slo field it sets, its type and its help."""

    field: str
    type: type
    help: str

    @property
    def flag(self) -> str:
        return "--slo-" + self.field.replace("_", "-")

    @property
    def dest(self) -> str:
        return "slo_" + self.field


#: Every SLO option, in one place (the parser and Slo.from_options both read it).
SLO_OPTIONS: tuple[SloOption, ...] = (
    SloOption("ttfa_p95_ms", float, "largest p95 time to first audio, ms"),
    SloOption("ttfa_p99_ms", float, "largest p99 time to first audio, ms"),
    SloOption("ttfa_audible_p95_ms", float, "largest p95 time to the first audible sample (-40 dBFS), ms"),
    SloOption("complete_p95_ms", float, "largest p95 time to synthesis_complete, ms"),
    SloOption("error_rate", float, "largest failed/attempted (messages and sessions), 0..1; without it "
              "any failed session breaks the gate"),
    SloOption("underruns", int, "most playback underruns allowed (run and each session)"),
    SloOption("goodput", float, "least share of sessions meeting every SLO, 0..1"),
    SloOption("max_content_errors", int, "most turns heard saying the wrong words (with --verify-audio-every)"),
)


@dataclass(frozen=True, slots=True)
class Slo:
    """Limits from the ``--slo-*`` options; None means "not part of the gate"."""

    ttfa_p95_ms: float | None = None
    ttfa_p99_ms: float | None = None
    ttfa_audible_p95_ms: float | None = None
    complete_p95_ms: float | None = None
    error_rate: float | None = None  # failed / attempted, 0..1
    underruns: int | None = None  # most underruns allowed in the run (and in any one session)
    goodput: float | None = None  # least share of sessions meeting every SLO, 0..1
    max_content_errors: int | None = None  # most turns heard saying the wrong words (--verify-audio-every)

    @classmethod
    def from_options(cls, options: Any) -> Slo:
        return cls(**{o.field: getattr(options, o.dest, None) for o in SLO_OPTIONS})

    @property
    def any_set(self) -> bool:
        return any(v is not None for v in asdict(self).values())

    def as_dict(self) -> dict[str, float | int | None]:
        return asdict(self)

    def session_ok(self, session: dict[str, Any]) -> bool:
        """Whether one session met every per-session objective (used for goodput).

        A session meets the SLO when it had no error, its own p95/p99 TTFA, p95 audible TTFA and
        p95 completion time are within the limits, and its underruns are within the underrun limit.
        """
        if session.get("errors", 0) or session.get("failure"):
            return False
        checks = ((self.ttfa_p95_ms, "ttfa_p95_ms"), (self.ttfa_p99_ms, "ttfa_p99_ms"),
                  (self.ttfa_audible_p95_ms, "ttfa_audible_p95_ms"), (self.complete_p95_ms, "complete_p95_ms"))
        for limit, key in checks:
            if limit is not None and (session.get(key) is None or session[key] > limit):
                return False
        return self.underruns is None or session.get("underruns", 0) <= self.underruns

    def broken(self, summary: dict[str, Any]) -> list[str]:
        """Human descriptions of every objective `summary` breaks (empty: the run passes)."""
        out: list[str] = []
        if not self.any_set:
            return out
        if not summary.get("messages"):
            failed = f" ({summary['sessions_failed']} sessions failed: {_causes(summary)})" \
                if summary.get("sessions_failed") else ""
            return ["no message was measured" + failed]

        def over(limit: float | None, value: float | None, label: str) -> None:
            if limit is None:
                return
            if value is None:
                out.append(f"{label}: nothing measured (limit {limit:g})")
            elif value > limit:
                out.append(f"{label} {value:.1f} > {limit:g}")

        over(self.ttfa_p95_ms, summary["ttfa_ms"]["p95"], "p95 TTFA ms")
        over(self.ttfa_p99_ms, summary["ttfa_ms"]["p99"], "p99 TTFA ms")
        over(self.ttfa_audible_p95_ms, summary.get("ttfa_audible_ms", {}).get("p95"), "p95 audible TTFA ms")
        over(self.complete_p95_ms, summary["complete_ms"]["p95"], "p95 complete ms")
        if self.error_rate is not None and summary["error_rate"] > self.error_rate:
            out.append(f"error rate {summary['error_rate']:.4f} > {self.error_rate:g}")
        elif self.error_rate is None and summary.get("sessions_failed"):
            out.append(f"{summary['sessions_failed']} sessions failed ({_causes(summary)}); "
                       "allow some with --slo-error-rate")
        if self.underruns is not None and summary["underruns"] > self.underruns:
            out.append(f"underruns {summary['underruns']} > {self.underruns}")
        if self.max_content_errors is not None and summary.get("content_errors", 0) > self.max_content_errors:
            out.append(f"content errors {summary['content_errors']} > {self.max_content_errors}")
        if self.goodput is not None:
            goodput = summary.get("goodput")
            if goodput is None or goodput < self.goodput:
                out.append(f"goodput {goodput} < {self.goodput:g}")
        return out


def _causes(summary: dict[str, Any]) -> str:
    return ", ".join(f"{cause} {n}" for cause, n in sorted(summary.get("failures", {}).items()))
