"""Run one case against one target and turn whatever happened into a CaseResult."""

from __future__ import annotations

import asyncio
import time
import traceback

from bidi_tts.transports.base import ConnectError, TransportClosed, TransportTimeout
from conformance.context import CaseContext, Options
from conformance.model import Case, CaseFailed, CaseResult, CaseSkipped, Outcome, Requires, Verdict
from conformance.targets import Target


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
    ctx = CaseContext(target, options)
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
        result = CaseResult(case, Verdict.FAILED, f"the container closed the session unexpectedly "
                            f"(code {exc.code}, reason {exc.reason!r})")
    except TransportTimeout as exc:
        result = CaseResult(case, Verdict.FAILED, f"no frame arrived in time ({exc})")
    except ConnectError as exc:
        result = CaseResult(case, Verdict.FAILED, f"cannot open a session: {exc}")
    except Exception as exc:  # a bug in the check itself: report it as such, with where it happened
        where = traceback.extract_tb(exc.__traceback__)[-1]
        result = CaseResult(case, Verdict.FAILED, f"the check itself raised {type(exc).__name__}: {exc} "
                            f"({where.filename}:{where.lineno}); report this as a suite bug")
    finally:
        await ctx.aclose()
    result.duration_s = time.perf_counter() - started
    return result


def run_case(case: Case, target: Target, options: Options) -> CaseResult:
    """Synchronous wrapper: one fresh event loop per case."""
    return asyncio.run(run_case_async(case, target, options))
