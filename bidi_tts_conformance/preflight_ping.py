"""A ``--container-url``'s ``/ping``: one answer, and the wait while it says 503 (still loading).

The polling is :func:`bidi_tts.probe.wait_for_ping` on :class:`bidi_tts.deadline.Deadline`; this
module says what happens in the suite's words, with a progress line every few seconds.
"""

from __future__ import annotations

from collections.abc import Callable

from bidi_tts import probe
from bidi_tts_conformance.preflight_net import CONNECT_TIMEOUT_S, Unreachable, host_port

PROGRESS_EVERY_S = 5.0

Progress = Callable[[str], None]


def ping(url: str, timeout: float = CONNECT_TIMEOUT_S) -> int:
    """The status of GET /ping; Unreachable when no HTTP answer comes."""
    host_port(url)
    try:
        return probe.ping(url, timeout)
    except probe.Unanswered as exc:
        raise Unreachable({
            "refused": f"nothing listens at --container-url {url} (connection refused)",
            "timeout": f"--container-url {url} accepted a connection but did not answer GET /ping within "
                       f"{timeout:.0f} s; is it an HTTP container?",
            "tls": f"TLS with --container-url {url} failed: {exc.detail}",
            "not_http": f"--container-url {url} does not speak HTTP: GET /ping got {exc.detail}",
        }.get(exc.reason, f"cannot reach --container-url {url}: {exc.detail}")) from None


def wait_loading(url: str, ready_timeout: float, progress: Progress) -> int:
    """Ask /ping until it answers something other than 503; the status, or Unreachable after `ready_timeout`."""
    progress(f"{url}/ping answers 503: the container is still loading; waiting up to {ready_timeout:.0f} s "
             "for 200 (--ready-timeout)")
    waited = probe.wait_for_ping(
        url, ready_timeout, settled=lambda status: status != 503, probe=lambda: ping(url), interval=0.5,
        note=lambda status, elapsed: progress(f"still loading: /ping answers {status} after {elapsed:.0f} s"),
        note_every=PROGRESS_EVERY_S)
    if not waited.ready:
        raise Unreachable(f"--container-url {url} is still loading: /ping answered 503 for {waited.elapsed:.0f} s "
                          "(--ready-timeout)")
    progress(f"/ping answered {waited.status} after {waited.elapsed:.1f} s")
    assert waited.status is not None  # ping answers a status or raises
    return waited.status
