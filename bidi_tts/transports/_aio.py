"""Best-effort awaits for cleanup paths that must never swallow the caller's own cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any


async def settle(awaitable: Awaitable[Any], timeout: float | None = None) -> None:
    """Await `awaitable` for at most `timeout` seconds, ignoring how it ends.

    Its failure, its own cancellation and the timeout are ignored; a cancellation of the task
    that calls this is not: it propagates (``contextlib.suppress(BaseException)`` would eat it
    and leave the caller running after it was told to stop).
    """
    try:
        async with asyncio.timeout(timeout):
            await awaitable
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
    except Exception:
        pass


async def cancel_and_wait(task: asyncio.Task[Any], timeout: float | None = None) -> None:
    """Cancel `task` and wait (at most `timeout` s) until it has ended; see :func:`settle`."""
    task.cancel()
    await settle(task, timeout)
