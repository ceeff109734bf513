"""Run cases against a target and turn whatever happened into CaseResults.

:func:`run_case` runs one case on its own (the suite's self-tests use it). :class:`SuiteRunner` runs
a whole selection the way the pytest plugin does: it calibrates the timeouts on the container first,
and before a case that follows one which left work running (a disconnect mid-message, a failure) it
waits, bounded, until the container answers a short probe promptly again. When that wait runs out
(a runaway: the container keeps synthesizing what a case left behind), the case is NOT-JUDGED, naming
the case that left the work, and every later case costs one short probe, not another wait: while the
container stays busy they are NOT-JUDGED too, never failed for another case's runaway.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import traceback
from collections.abc import Callable
from typing import Any

import httpx

from bidi_tts.deadline import Deadline
from bidi_tts.transports.base import ConnectError, TransportClosed, TransportTimeout
from bidi_tts_conformance.calibration import Calibration, calibrate, is_prompt, probe_ttfa
from bidi_tts_conformance.context import CaseContext, Options
from bidi_tts_conformance.diagnose import describe_close, describe_connect_error
from bidi_tts_conformance.dialect_judge import judge_findings
from bidi_tts_conformance.dialect_scope import not_judged_because
from bidi_tts_conformance.failures import CaseFailed, CaseSkipped
from bidi_tts_conformance.focus import focus_of
from bidi_tts_conformance.model import Case, CaseResult, Outcome, Requires, Verdict
from bidi_tts_conformance.targets import Target


def unmet_requirement(case: Case, target: Target) -> str | None:
    """Why `case` cannot run on `target`, or None when it can."""
    if Requires.SAGEMAKER in case.requires and target.kind != "sagemaker":
        return "runs only through the SageMaker transport (use --endpoint-name)"
    if Requires.HTTP in case.requires and target.kind == "sagemaker":
        return f"needs plain HTTP to the container; the {target.kind} target has none"
    if Requires.WEBSOCKET in case.requires and target.kind == "sagemaker":
        return "needs the direct WebSocket transport (headers and frames SageMaker does not pass)"
    if Requires.IMAGE in case.requires and target.image is None:
        return "needs a Docker image target (the image label is checked with docker inspect)"
    return None


async def run_case_async(case: Case, target: Target, options: Options) -> CaseResult:
    """Run one case; never raises for container misbehaviour."""
    reason = unmet_requirement(case, target)
    if reason:
        return CaseResult(case, Verdict.SKIPPED, reason)
    if (outside := not_judged_because(case.id, options.dialect)) is not None:
        return CaseResult(case, Verdict.NOT_JUDGED, outside)
    ctx = CaseContext(target, options, focus=focus_of(case.id))
    started = time.perf_counter()
    try:
        async with asyncio.timeout(options.case_timeout):
            outcome = await case.check(ctx)
        outcome = outcome or Outcome()
        result = CaseResult(case, outcome.verdict, outcome.detail)
    except CaseFailed as exc:
        result = CaseResult(case, Verdict.FAILED, exc.detail, exc.expected, exc.actual)
    except CaseSkipped as exc:
        result = CaseResult(case, Verdict.SKIPPED, str(exc))
    except TimeoutError:
        detail = f"the case did not finish within {options.case_timeout:.0f} s (--case-timeout)"
        result = CaseResult(case, Verdict.FAILED, detail, "an answer", "no answer in time")
    except TransportClosed as exc:
        result = CaseResult(case, Verdict.FAILED, f"the container unexpectedly {describe_close(exc)}")
    except TransportTimeout as exc:
        result = CaseResult(case, Verdict.FAILED, f"no frame arrived in time ({exc})")
    except ConnectError as exc:
        result = CaseResult(case, Verdict.FAILED, f"cannot open a session: {describe_connect_error(exc)}")
    except (httpx.TransportError, OSError) as exc:  # nothing listens, or the connection broke
        result = CaseResult(case, Verdict.FAILED, f"cannot reach the container: {type(exc).__name__}: {exc}",
                            "an answer", "no connection")
    except Exception as exc:  # a bug in the check itself: report it as such, with where it happened
        where = traceback.extract_tb(exc.__traceback__)[-1]
        result = CaseResult(case, Verdict.FAILED, f"the check itself raised {type(exc).__name__}: {exc} "
                            f"({where.filename}:{where.lineno}); report this as a suite bug")
    finally:
        await ctx.aclose()
    result = judge_findings(result, ctx.dialect_findings(), options.dialect)
    result.duration_s = time.perf_counter() - started
    result.notes.extend(ctx.notes.lines)
    result.left_work_running = ctx.left_work_running
    result.trace = ctx.trace
    return result


def run_case(case: Case, target: Target, options: Options) -> CaseResult:
    """Synchronous wrapper: one fresh event loop per case."""
    return asyncio.run(run_case_async(case, target, options))


class SuiteRunner:
    """Runs cases in order on one target with calibrated timeouts and quiet-container checks."""

    def __init__(self, target: Target, options: Options, *, calibrate_timeouts: bool = True,
                 case_timeout_given: bool = False, progress: Callable[[str], None] = lambda _: None) -> None:
        self.target = target
        self.options = options
        self.calibration: Calibration | None = None
        self._calibrate_timeouts = calibrate_timeouts
        self._case_timeout_given = case_timeout_given
        self._progress = progress
        self._previous: CaseResult | None = None
        self._suspect: str | None = None  # the first case since the last quiet check that may have left work
        self._runaway: str | None = None  # the case whose work outlasted the bounded wait
        self._runaway_seen_by: str | None = None  # the case that found it (and says so in full)
        self._mute_failed: str | None = None  # on a container that refuses every message: the case that says so

    def prepare(self) -> None:
        """Measure the container once (the first case calls this)."""
        if self.calibration is not None:
            return
        started = time.perf_counter()
        self.calibration = asyncio.run(calibrate(self.target, self.options.voice, self.options.sample_rate))
        if self.calibration.refusal is not None:
            self._progress(f"the container synthesizes nothing: 'Hi.' was refused with {self.calibration.refusal}; "
                           "the first case that fails for it says so, the others are not judged")
        if self._calibrate_timeouts:
            changes: dict[str, float | None] = {"silence": self.calibration.silence,
                                                "end_silence": self.calibration.end_silence,
                                                "end_silence_one": self.calibration.end_silence_one}
            if not self._case_timeout_given:
                changes["case_timeout"] = self.calibration.case_timeout()
            self.options = dataclasses.replace(self.options, **changes)  # type: ignore[arg-type]
            self._progress(f"{self.calibration.summary()}; case timeout {self.options.case_timeout:.0f} s "
                           f"(calibration took {time.perf_counter() - started:.1f} s)")
        else:
            self._progress(f"silence allowed {self.options.silence:.1f} s (--reply-timeout); "
                           f"{self.calibration.summary()}")

    def timeouts(self) -> dict[str, Any]:
        """The timeouts the cases ran with and where they came from, for the report."""
        cal = self.calibration
        silence_from = ("--reply-timeout" if not self._calibrate_timeouts else
                        "calibrated" if cal is not None else "default (no case reached the container)")
        case_from = ("--case-timeout" if self._case_timeout_given else
                     "calibrated (25x the silence allowed, 60 to 300 s)" if cal is not None and self._calibrate_timeouts
                     else "default")
        measured: dict[str, Any] | None = None
        if cal is not None:
            measured = {
                "probe_first_audio_ms": None if cal.probe_ttfa_s is None else round(cal.probe_ttfa_s * 1000, 1),
                "slowest_silence_ms": None if cal.slowest_silence_s is None else round(cal.slowest_silence_s * 1000, 1),
                "suggested_silence_s": round(cal.silence, 3),
                "problem": cal.problem,
                "summary": cal.summary(),
            }
        return {
            "silence_allowed_s": round(self.options.silence, 3),
            "silence_allowed_from": silence_from,
            "case_timeout_s": round(self.options.case_timeout, 3),
            "case_timeout_from": case_from,
            "calibrated": cal is not None and self._calibrate_timeouts,
            "end_silence_s": None if self.options.end_silence is None else round(self.options.end_silence, 3),
            "calibration": measured,
        }

    def run(self, case: Case) -> CaseResult:
        reason = unmet_requirement(case, self.target)
        if reason:
            return CaseResult(case, Verdict.SKIPPED, reason)
        if (outside := not_judged_because(case.id, self.options.dialect)) is not None:
            return CaseResult(case, Verdict.NOT_JUDGED, outside)  # no calibration, no container time
        self.prepare()
        if (busy := self._busy_before(case)) is not None:
            return busy
        result = run_case(case, self.target, self.options)
        self._after(result)
        return self._judged_on_a_mute_container(result)

    def _judged_on_a_mute_container(self, result: CaseResult) -> CaseResult:
        """A container that refuses even 'Hi.' fails every case that needs speech, for that one reason:
        the first failure says so with the container's own error; the later ones are NOT-JUDGED."""
        refusal = self.calibration.refusal if self.calibration is not None else None
        if refusal is None or result.verdict is not Verdict.FAILED:
            return result
        if self._mute_failed is None:
            self._mute_failed = result.case.id
            result.detail = (f"the container synthesizes nothing: 'Hi.' was refused with {refusal} at the "
                             f"start of the run; here: {result.detail}")
            return result
        result.verdict = Verdict.NOT_JUDGED
        result.detail = (f"not judged: the container synthesizes nothing ({refusal}; see {self._mute_failed}); "
                         f"here: {result.detail}")
        return result

    # -- a container left busy: one bounded wait per runaway, not one per case --------------------
    def _after(self, result: CaseResult) -> None:
        """Remember the first case since the container was last seen quiet that may have left it busy."""
        if self._suspect is None and self._needs_settling(result):
            self._suspect = result.case.id
        self._previous = result

    @staticmethod
    def _needs_settling(previous: CaseResult) -> bool:
        return previous.left_work_running or previous.verdict is Verdict.FAILED

    def _busy_before(self, case: Case) -> CaseResult | None:
        """None when the container is quiet enough to judge `case`; else its NOT-JUDGED result. The
        first time the container stays busy it gets one bounded wait; once that has run out (a runaway),
        each later case gets one short probe and, while the runaway lasts, is not judged."""
        if self._runaway is None:
            if self._suspect is None:
                return None
            why = self._settle(self._wait_budget())
            if why is None:
                self._suspect = None
                return None
            self._runaway, self._runaway_seen_by = self._suspect, case.id
            self._progress(f"the container was still busy {self._wait_budget():.0f} s after {self._runaway}: "
                           f"the cases after it are not judged while it stays busy")
            detail = (f"not judged: the container was still busy with work that {self._runaway} left running "
                      f"({why}); the cases after this one are not judged while it stays busy")
            return CaseResult(case, Verdict.NOT_JUDGED, detail)
        assert self.calibration is not None and self.calibration.probe_ttfa_s is not None
        if self._settle(self._quick_budget()) is None:
            self._progress(f"the container is quiet again after {self._runaway}'s runaway")
            self._runaway = self._suspect = None
            return None
        return CaseResult(case, Verdict.NOT_JUDGED, f"not judged: the container was still busy with "
                          f"{self._runaway}'s runaway (see {self._runaway_seen_by})")

    def _wait_budget(self) -> float:
        """Work a good container leaves behind (the sentence in progress when its client left) ends within
        a few silences allowed; the rest is a runaway."""
        return min(60.0, max(6.0, 3 * self.options.silence))

    def _quick_budget(self) -> float:
        """Long enough for a probe that would count as prompt, no longer."""
        assert self.calibration is not None and self.calibration.probe_ttfa_s is not None
        baseline = self.calibration.probe_ttfa_s
        return max(3 * baseline, baseline + 0.5) + 0.5

    def _settle(self, budget: float) -> str | None:
        """Wait up to `budget` seconds until a short probe is answered promptly; why not, when it never was."""
        assert self.calibration is not None
        baseline = self.calibration.probe_ttfa_s
        if baseline is None:
            return None
        deadline = Deadline(budget)
        last: float | None = None
        while (left := deadline.remaining()) > 0:
            ttfa = asyncio.run(probe_ttfa(self.target, self.options.voice, self.options.sample_rate, left))
            if ttfa is not None and is_prompt(ttfa, baseline):
                return None
            last = ttfa
            time.sleep(0.2)
        shown = f"its first audio after {last:.1f} s" if last is not None else "no audio"
        return (f"a 'Hi.' probe got {shown} for {budget:.0f} s, against {baseline * 1000:.0f} ms at the start "
                f"of the run")
