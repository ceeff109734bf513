"""The load run's preflight: one TCP connect says whether anything listens at the target."""

from __future__ import annotations

import socket
from types import SimpleNamespace

from bidi_tts.local_container import free_port
from bidi_tts_loadtest.core.preflight import target_unreachable, unreachable


def test_a_listening_port_passes_and_a_closed_one_is_named() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(1)
        assert unreachable(f"http://127.0.0.1:{listening.getsockname()[1]}") is None
    port = free_port()
    assert unreachable(f"ws://127.0.0.1:{port}/x") == \
        f"nothing listens at 127.0.0.1:{port} (connection refused; from ws://127.0.0.1:{port}/x)"


def test_an_unresolvable_host_is_named() -> None:
    assert unreachable("http://no-such-host.invalid:8080", timeout_s=2) == \
        "cannot resolve 'no-such-host.invalid' (from http://no-such-host.invalid:8080)"


def test_an_endpoint_is_checked_only_through_its_endpoint_url() -> None:
    port = free_port()
    endpoint = SimpleNamespace(endpoint_name="tts", endpoint_url=None)
    assert target_unreachable(endpoint, None) is None  # the real runtime: the sessions' own errors say why
    stand_in = SimpleNamespace(endpoint_name="tts", endpoint_url=f"https://127.0.0.1:{port}")
    assert "nothing listens" in (target_unreachable(stand_in, None) or "")
    assert "nothing listens" in (target_unreachable(SimpleNamespace(endpoint_name=None), f"http://127.0.0.1:{port}")
                                 or "")
