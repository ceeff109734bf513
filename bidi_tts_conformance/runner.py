"""Run cases against a target and turn whatever happened into CaseResults.

:func:`run_case` runs one case on its own (the suite's self-tests use it). :class:`SuiteRunner` runs
a whole selection the way the pytest plugin does: it calibrates the timeouts on the container first,
and before a case that follows one which left work running (a disconnect mid-message, a failure) it
waits, bounded, until the container answers a short probe promptly again. When that wait runs out
(a runaway: the container keeps synthesizing what a case left behind), the case is NOT-JUDGED, naming
the case that left the work, and every later case costs one short probe, not another wait: while the
container stays busy they are NOT-JUDGED too, never failed for another case's runaway.

A case that failed only because a frame did not come within the calibrated silence is not final until
a 'Hi.' probe shows the container as quick as at the start; when it has slowed, the run re-measures it
and runs the case once more with the larger silence, which the later cases keep (pace_check.py).
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
from bidi_tts_conformance.failures import CaseFailed, CaseNotJudged, CaseSkipped, silence_behind
from bidi_tts_conformance.focus import focus_of
from bidi_tts_conformance.model import Case, CaseResult, Outcome, Requires, Verdict
from bidi_tts_conformance.pace_check import (
    MAX_RECALIBRATIONS,
    PaceProbe,
    probe_pace,
    recalibrate,
    retry_note,
    spent_note,
    why_it_stands,
)
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
    result, _ = await _attempt(case, target, options)
    return result


async def _attempt(case: Case, target: Target, options: Options) -> tuple[CaseResult, float | None]:
    """Run one case that can run here; with its result, the silence it failed on when nothing else
    went wrong (no wrong frame, no close, no error: a failure the container's pace alone can cause)."""
    ctx = CaseContext(target, options, focus=focus_of(case.id))
    started = time.perf_counter()
    silence: float | None = None
    try:
        async with asyncio.timeout(options.case_timeout):
            outcome = await case.check(ctx)
        outcome = outcome or Outcome()
        result = CaseResult(case, outcome.verdict, outcome.detail)
    except CaseFailed as exc:
        result = CaseResult(case, Verdict.FAILED, exc.detail, exc.expected, exc.actual)
        silence = silence_behind(exc)
    except CaseSkipped as exc:
        result = CaseResult(case, Verdict.SKIPPED, str(exc))
    except CaseNotJudged as exc:
        result = CaseResult(case, Verdict.NOT_JUDGED, str(exc))
    except TimeoutError:
        detail = f"the case did not finish within {options.case_timeout:.0f} s (--case-timeout)"
        result = CaseResult(case, Verdict.FAILED, detail, "an answer", "no answer in time")
    except TransportClosed as exc:
        result = CaseResult(case, Verdict.FAILED, f"the container unexpectedly {describe_close(exc)}")
    except TransportTimeout as exc:
        result = CaseResult(case, Verdict.FAILED, f"no frame arrived in time ({exc})")
        silence = options.silence
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
    return result, (silence if result.verdict is Verdict.FAILED else None)


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
        self.recalibrations: list[dict[str, Any]] = []  # one per re-measure after a case met a slowed container

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
            self._use(self.calibration)
            self._progress(f"{self.calibration.summary()}; case timeout {self.options.case_timeout:.0f} s "
                           f"(calibration took {time.perf_counter() - started:.1f} s)")
        else:
            self._progress(f"silence allowed {self.options.silence:.1f} s (--reply-timeout); "
                           f"{self.calibration.summary()}")

    def timeouts(self) -> dict[str, Any]:
        """The timeouts the cases ran with and where they came from, for the report."""
        cal = self.calibration
        silence_from = ("--reply-timeout" if not self._calibrate_timeouts else
                        f"recalibrated {len(self.recalibrations)}x (the container slowed)" if self.recalibrations
                        else "calibrated" if cal is not None else "default (no case reached the container)")
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
            "recalibrations": self.recalibrations,
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
        result, silence = asyncio.run(_attempt(case, self.target, self.options))
        if silence is not None:
            result = self._unless_slowed(case, result)
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

    # -- a container that slowed down after the calibration: re-measure, retry once ----------------
    def _unless_slowed(self, case: Case, failed: CaseResult) -> CaseResult:
        """`failed` came only from a silence: it stands unless a 'Hi.' probe finds the container slower
        than at the start; then the run re-measures it and the case's retry (with the new, larger
        silence, kept for the later cases) gives the verdict."""
        cal = self.calibration
        if not self._calibrate_timeouts or cal is None or cal.probe_ttfa_s is None:
            return failed  # a silence set by hand (--reply-timeout), or nothing to compare the pace with
        started = time.perf_counter()
        probe = probe_pace(self.target, self.options.voice, self.options.sample_rate, cal.probe_ttfa_s,
                           self.options.silence)
        if not probe.slowed:
            failed.detail += f" ({why_it_stands(probe)})"
            failed.duration_s += time.perf_counter() - started
            return failed
        if len(self.recalibrations) >= MAX_RECALIBRATIONS:
            note = spent_note(failed.detail, probe, len(self.recalibrations))
            return CaseResult(case, Verdict.NOT_JUDGED, note, duration_s=failed.duration_s + time.perf_counter()
                              - started, notes=failed.notes, trace=failed.trace,
                              left_work_running=failed.left_work_running)
        return self._retried(case, failed, probe, started)

    def _retried(self, case: Case, failed: CaseResult, probe: PaceProbe, started: float) -> CaseResult:
        assert self.calibration is not None
        before = self.options.silence
        again = recalibrate(self.target, self.options.voice, self.options.sample_rate, self.calibration, probe,
                            before)
        self.recalibrations.append({"case": case.id, "probe_ms": round((probe.ttfa_s or 0) * 1000, 1),
                                    "baseline_ms": round(probe.baseline_s * 1000, 1),
                                    "silence_before_s": round(before, 3),
                                    "silence_after_s": None if again is None else round(again.silence, 3)})
        if again is None:
            failed.detail += f" ({probe.said()}; re-measuring the slowed container got nothing to measure)"
            failed.duration_s += time.perf_counter() - started
            return failed
        self.calibration = again
        self._use(again)
        self._progress(f"{case.id}: no frame within {before:.1f} s and {probe.said()}: the container slowed; "
                       f"recalibrated: silence allowed now {again.silence:.1f} s for its retry and the cases "
                       f"after it (recalibration {len(self.recalibrations)} of at most {MAX_RECALIBRATIONS})")
        retry, _ = asyncio.run(_attempt(case, self.target, self.options))
        note = retry_note(failed.detail, probe, before, again.silence)
        retry.detail = f"{retry.detail}; {note}" if retry.detail else note
        retry.duration_s = time.perf_counter() - started + failed.duration_s
        return retry

    def _use(self, cal: Calibration) -> None:
        """Take the calibration's timeouts (and its case timeout, unless --case-timeout was given)."""
        changes: dict[str, float | None] = {"silence": cal.silence, "end_silence": cal.end_silence,
                                            "end_silence_one": cal.end_silence_one}
        if not self._case_timeout_given:
            changes["case_timeout"] = cal.case_timeout()
        self.options = dataclasses.replace(self.options, **changes)  # type: ignore[arg-type]

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
