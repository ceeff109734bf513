"""The suite must FAIL the right cases against containers that each break one clause."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from conformance.cases import REGISTRY
from conformance.context import Options
from conformance.model import Verdict
from conformance.runner import run_case
from conformance.targets import Target
from tests.toys import broken
from tests.toys.good import ServerThread, ToyContainer

FAST = Options(reply_timeout=1.5, case_timeout=30.0)


@dataclass(frozen=True)
class Expect:
    """Run `cases` against `toy`: `failed` maps case id -> a phrase its detail must contain."""

    toy: Callable[[], ToyContainer]
    failed: dict[str, str]
    passed: tuple[str, ...] = ()
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # other expected verdicts

    @property
    def cases(self) -> list[str]:
        return [*self.failed, *self.passed, *self.verdicts]


EXPECTATIONS: dict[str, Expect] = {
    "receive_text_bug": Expect(broken.TextOnlyToy, {
        "frames.binary.1": "binary frame not handled",
        "frames.fragmented.2": "",
        "frames.fragmented.4": "",
        "close.explicit.2": "",
    }, passed=("frames.text.1", "frames.fragmented.1", "frames.fragmented.3", "close.explicit.1")),
    "close_after_first": Expect(broken.CloseAfterFirstToy, {
        "session.multi.1": "message 2 of 2",
        "session.multi.3": "",
        "session.reuse.1": "",
    }, passed=("frames.text.1", "health.ping.1")),
    "never_complete": Expect(broken.NoCompleteToy, {
        "audio.order.1": "no synthesis_complete",
        "audio.consistent.1": "",
        "frames.text.1": "",
    }, passed=("health.ping.1", "close.explicit.2")),
    "ignores_close": Expect(broken.IgnoreCloseToy, {
        "close.explicit.1": "close request ignored",
        "close.synthesizing.1": "",
    }, passed=("frames.text.1", "session.multi.1")),
    "wrong_close_code": Expect(broken.WrongCloseCodeToy, {
        "close.explicit.1": "wrong close code 1011",
        "close.explicit.2": "1011",
    }, passed=("session.multi.2",)),
    "no_streaming": Expect(broken.NoStreamToy, {"audio.stream.1": "no streaming"},
                           passed=("audio.order.1",)),
    "streaming_control": Expect(broken.StreamingToy, {}, passed=("audio.stream.1",)),
    "base64_audio": Expect(broken.Base64AudioToy, {"audio.binary.1": "audio inside JSON"},
                           passed=("health.ping.1", "close.explicit.2")),
    "odd_frames": Expect(broken.OddFramesToy, {"audio.samples.1": "odd-length audio frames"},
                         passed=("health.ping.1", "close.explicit.2")),
    "silent": Expect(broken.SilentToy, {"audio.sound.1": "silent"},
                     passed=("audio.order.1", "audio.consistent.1", "session.multi.2")),
    "wrong_totals": Expect(broken.WrongTotalsToy, {"audio.consistent.1": "reports audio_bytes"},
                           passed=("health.ping.1", "close.explicit.2")),
    "leaks_str_e": Expect(broken.LeakyErrorsToy, {
        "errors.text_required.1": "bare exception string",
        "errors.invalid_json.1": "bare exception string",
        "robust.types.text": "",
    }, passed=("frames.text.1", "audio.order.1")),
    "missing_error_code": Expect(broken.MissingCodeToy, {
        "errors.unknown_voice.1": "missing error code",
        "errors.bad_speed.1": "missing error code",
    }, passed=("frames.text.1",)),
    "wrong_error_code": Expect(broken.WrongCodeToy, {
        "errors.not_an_object.1": "'internal'",
        "robust.voice.1": "'internal'",
    }, passed=("frames.text.1",)),
    "closes_on_bad_input": Expect(broken.CloseOnBadInputToy, {
        "errors.invalid_json.1": "code 1011",
        "robust.json.3": "code 1011",
        "session.reuse.1": "",
    }, passed=("frames.text.1", "close.explicit.1")),
    "any_voice": Expect(broken.AcceptAnyVoiceToy, {
        "robust.voice.1": "accepted and synthesized",
        "errors.unknown_voice.1": "accepted and synthesized",
    }, passed=("frames.text.1",)),
    "ping_never_200": Expect(broken.PingNeverReadyToy, {
        "health.ping.1": "HTTP 503",
        "health.ping.2": "503",
    }, passed=("frames.text.1",)),
    "slow_accept": Expect(broken.SlowAcceptToy, {"health.accept.1": "slow accept"},
                          passed=("health.ping.1",)),
    "post_errors_500": Expect(broken.PostErrors500Toy, {"post.errors.1": "HTTP 500"}, passed=("post.pcm.1",)),
    "cross_talk": Expect(broken.CrossTalkToy, {"isolation.concurrent.1": ""}, passed=("health.ping.1",)),
    "no_cancel": Expect(ToyContainer, {}, passed=("cancel.idle.1",),
                        verdicts={"cancel.1": Verdict.NON_STRICT}),
}


@pytest.fixture(params=sorted(EXPECTATIONS), ids=str)
def expectation(request: pytest.FixtureRequest) -> Iterator[tuple[Expect, Target]]:
    expect = EXPECTATIONS[request.param]
    with ServerThread(expect.toy().app()) as server:
        yield expect, Target(kind="url", base_url=server.url)


@pytest.mark.timeout(120)
def test_broken_toy_fails_the_right_cases(expectation: tuple[Expect, Target]) -> None:
    expect, target = expectation
    results = {cid: run_case(REGISTRY[cid], target, FAST) for cid in expect.cases}
    summary = {cid: f"{r.verdict}: {r.detail[:200]}" for cid, r in results.items()}
    for cid, phrase in expect.failed.items():
        assert results[cid].verdict is Verdict.FAILED, f"{cid} should fail: {summary}"
        assert phrase in results[cid].detail, f"{cid}: detail should name {phrase!r}: {summary[cid]}"
        assert "report this as a suite bug" not in results[cid].detail, summary[cid]
    for cid in expect.passed:
        assert results[cid].verdict is Verdict.OK, f"{cid} should pass: {summary}"
    for cid, verdict in expect.verdicts.items():
        assert results[cid].verdict is verdict, f"{cid} should be {verdict}: {summary}"


def test_every_case_is_exercised_by_the_good_toy_list() -> None:
    """Every id named above exists (a renamed case must not silently drop out of the self-tests)."""
    for expect in EXPECTATIONS.values():
        for cid in expect.cases:
            assert REGISTRY[cid].id == cid
