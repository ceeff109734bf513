"""Run cases against a target and turn whatever happened into CaseResults.

:func:`run_case` runs one case on its own (the suite's self-tests use it). :class:`SuiteRunner` runs
a whole selection the way the pytest plugin does: it calibrates the timeouts on the container first,
and before a case that follows one which left work running (a disconnect mid-message, a failure) it
waits, bounded, until the container answers a short probe promptly again; a case that still starts
on a busy container says so instead of blaming itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import traceback
from collections.abc import Callable
from typing import Any

import httpx

from bidi_tts.transports.base import ConnectError, TransportClosed, TransportTimeout
from bidi_tts_conformance.calibration import Calibration, calibrate, is_prompt, probe_ttfa
from bidi_tts_conformance.context import CaseContext, Options
from bidi_tts_conformance.diagnose import describe_close, describe_connect_error
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

    def prepare(self) -> None:
        """Measure the container once (the first case calls this)."""
        if self.calibration is not None:
            return
        started = time.perf_counter()
        self.calibration = asyncio.run(calibrate(self.target, self.options.voice, self.options.sample_rate))
        if self._calibrate_timeouts:
            changes: dict[str, float | None] = {"reply_timeout": self.calibration.reply_timeout,
                                                "end_silence": self.calibration.end_silence,
                                                "end_silence_one": self.calibration.end_silence_one}
            if not self._case_timeout_given:
                changes["case_timeout"] = self.calibration.case_timeout()
            self.options = dataclasses.replace(self.options, **changes)  # type: ignore[arg-type]
            self._progress(f"{self.calibration.summary()}; case timeout {self.options.case_timeout:.0f} s "
                           f"({time.perf_counter() - started:.1f} s)")
        else:
            self._progress(f"silence allowed {self.options.reply_timeout:.1f} s (--reply-timeout); "
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
                "suggested_silence_s": round(cal.reply_timeout, 3),
                "problem": cal.problem,
                "summary": cal.summary(),
            }
        return {
            "silence_allowed_s": round(self.options.reply_timeout, 3),
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
        self.prepare()
        busy = self._settle() if self._previous is not None and self._needs_settling(self._previous) else None
        result = run_case(case, self.target, self.options)
        if busy is not None:
            result.notes.insert(0, busy)
            if result.verdict is Verdict.FAILED:
                result.detail = f"{busy}; then: {result.detail}"
        self._previous = result
        return result

    @staticmethod
    def _needs_settling(previous: CaseResult) -> bool:
        return previous.left_work_running or previous.verdict is Verdict.FAILED

    def _settle(self) -> str | None:
        """Wait, bounded, until a short probe is answered promptly; why not, when it never was."""
        assert self.calibration is not None and self._previous is not None
        baseline = self.calibration.probe_ttfa_s
        if baseline is None:
            return None
        budget = min(60.0, max(20.0, 10 * self.options.reply_timeout))
        deadline = time.perf_counter() + budget
        last: float | None = None
        while (left := deadline - time.perf_counter()) > 0:
            ttfa = asyncio.run(probe_ttfa(self.target, self.options.voice, self.options.sample_rate, left))
            if ttfa is not None and is_prompt(ttfa, baseline):
                return None
            last = ttfa
            time.sleep(0.2)
        previous = self._previous.case.id
        self._progress(f"the container was still busy {budget:.0f} s after {previous}")
        shown = f"{last:.1f} s" if last is not None else "no answer"
        return (f"the container was still busy after the previous case {previous} left work running: "
                f"a 'Hi.' probe took {shown} for {budget:.0f} s, against {baseline * 1000:.0f} ms at the start "
                f"of the run")
