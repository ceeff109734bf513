"""process_probe.sigterm_disposition: what a process does with SIGTERM, read from /proc/PID/status, as
stop.sigterm.1 says it when a container does not exit (the masks below are the ones read from the toy
images' PID 1, tests/toys/image)."""

from __future__ import annotations

from bidi_tts_conformance.process_probe import sigterm_disposition


def _status(cgt: str, ign: str = "0000000000000000", blk: str = "0000000000000000") -> str:
    return f"Name:\tbash\nSigQ:\t0/1\nSigPnd:\t0000000000000000\nSigBlk:\t{blk}\nSigIgn:\t{ign}\nSigCgt:\t{cgt}\n"


def test_a_pid_1_without_a_handler_drops_sigterm() -> None:
    said = sigterm_disposition(_status("0000000000010002"), pid_one=True)  # bash with no trap
    assert said is not None and said.startswith("has no SIGTERM handler, and as PID 1 the kernel drops")


def test_a_shell_with_an_exit_trap_catches_sigterm() -> None:
    said = sigterm_disposition(_status("0000000043817efb", "0000000000000004", "0000000000010000"), pid_one=True)
    assert said == "catches SIGTERM (a handler is installed)"


def test_ignored_and_unknown() -> None:
    assert sigterm_disposition(_status("0", ign="0000000000004000"), pid_one=False) == "ignores SIGTERM (SIG_IGN)"
    default = "has no SIGTERM handler (its default action, exit, applies)"
    assert sigterm_disposition(_status("0"), pid_one=False) == default
    assert sigterm_disposition("Name:\tx\n", pid_one=True) is None
