"""container_at: a given URL as is; otherwise the reference container started for the run and stopped after."""

from __future__ import annotations

from typing import Any

import pytest

from bidi_tts_conformance import local_target
from bidi_tts_conformance.local_target import container_at


def test_a_given_url_is_used_and_nothing_is_started(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_target, "ProcessTarget", None)  # any start would fail
    with container_at("http://127.0.0.1:9", "x") as (url, started):
        assert url == "http://127.0.0.1:9" and started is None


class _Stub:
    def __init__(self, log_path: str | None = None) -> None:
        self.log_path, self.base_url, self.events = log_path, None, []

    def start(self, progress: Any) -> None:
        self.base_url = "http://127.0.0.1:1234"
        progress("ready")
        self.events.append("start")

    def stop(self) -> None:
        self.events.append("stop")


def test_without_a_url_the_container_starts_under_the_label_and_stops_even_on_error(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    made: list[_Stub] = []
    monkeypatch.setattr(local_target, "ProcessTarget", lambda **kw: made.append(_Stub(**kw)) or made[-1])
    with pytest.raises(RuntimeError), container_at(None, "soak", log_path="c.log") as (url, started):
        assert url == "http://127.0.0.1:1234" and started is made[0] and made[0].log_path == "c.log"
        raise RuntimeError("the run broke")
    assert made[0].events == ["start", "stop"]
    assert capsys.readouterr().out == "soak: ready\n"
