"""The Locust user: one voice-agent session at a time, over a WebSocket or SageMaker."""

from __future__ import annotations

import logging
import os
import random
import time
from pathlib import Path
from typing import Any

import gevent
from locust import User, constant, task

from bidi_tts.metrics import MessageMetrics
from bidi_tts.protocol import SAMPLE_WIDTH_BYTES
from bidi_tts.session import ClientSession, MessageRecord
from bidi_tts.transports.base import ConnectError, TransportError
from bidi_tts.wav_file import write_wav
from bidi_tts_loadtest.core.corpus import load_answers
from bidi_tts_loadtest.core.target import open_sync_transport
from bidi_tts_loadtest.core.turn import TurnConfig, TurnResult, run_turn
from bidi_tts_loadtest.run import summary as S
from bidi_tts_loadtest.run.failures import FATAL, STREAM_ERROR, TIMEOUT, cause_of
from bidi_tts_loadtest.run.plugin import run_state

REQUEST_TYPE = "TTS"
log = logging.getLogger("loadtest")


class MessageFailed(Exception):
    """A message answered with an error frame, or never finished."""


class SessionFailed(Exception):
    """A session could not be opened, or ended outside a message."""


class TTSUser(User):
    """Runs sessions back to back: connect, a few turns of agent answers, explicit close."""

    wait_time = constant(0)

    def on_start(self) -> None:
        opts = self.environment.parsed_options
        self.opts = opts
        self.state = run_state(self.environment)
        self.rng = random.Random(f"{getattr(opts, 'seed', 0)}-{os.getpid()}-{id(self)}")
        self.config = TurnConfig(
            tokens_per_second=opts.tokens_per_second,
            first_token_delay_s=opts.first_token_ms / 1000.0,
            voice=opts.voice,
            message_timeout_s=opts.message_timeout_s,
        )

    def _fire(self, name: str, ms: float, length: int = 0, exc: Exception | None = None) -> None:
        self.environment.events.request.fire(request_type=REQUEST_TYPE, name=name, response_time=ms,
                                             response_length=length, exception=exc, context={})

    def _on_message(self, record: MessageRecord, m: MessageMetrics) -> None:
        rec, now = self.state.recorder, time.time()
        ok = record.error_code is None and m.ttfa_s is not None and m.complete_s is not None
        rec.add(S.MESSAGE_OK, 1.0 if ok else 0.0, now)
        rec.add(S.WRAPS, len(record.wraps.wraps), now)
        if not ok:
            self._fire("message", 0.0, record.audio_bytes, MessageFailed(record.error_code or "incomplete"))
            return
        assert m.ttfa_s is not None and m.complete_s is not None and m.ttfa_from_send_s is not None
        rec.add(S.TTFA, m.ttfa_s * 1000, now)
        rec.add(S.TTFA_FROM_SEND, m.ttfa_from_send_s * 1000, now)
        if m.ttfa_audible_s is not None:
            rec.add(S.TTFA_AUDIBLE, m.ttfa_audible_s * 1000, now)
        rec.add(S.COMPLETE, m.complete_s * 1000, now)
        if m.rtf is not None:
            rec.add(S.RTF, m.rtf, now)
        for gap in m.gaps_s:
            rec.add(S.GAP, gap * 1000, now)
        rec.add(S.UNDERRUNS, m.underruns.count, now)
        if m.underruns.count:
            rec.add(S.STALL, m.underruns.stall_s * 1000, now)
        self._fire("ttfa", m.ttfa_s * 1000, record.audio_bytes)
        self._fire("complete", m.complete_s * 1000, record.audio_bytes)

    @task
    def conversation(self) -> None:
        rec = self.state.recorder
        started_wall, started = time.time(), time.perf_counter()
        self.state.sessions_started += 1
        session_id = f"{os.getpid()}-{self.state.sessions_started}"
        try:
            transport = open_sync_transport(self.opts, self.host)
        except (ConnectError, ValueError) as exc:
            self._fire("connect", (time.perf_counter() - started) * 1000, 0, SessionFailed(str(exc)))
            rec.add(S.SESSION_FAIL, 1.0, time.time())
            self._session_failed(cause_of(exc), str(exc))
            rec.add_session({"at": time.time(), "outcome": S.FAILED, "cause": cause_of(exc), "failure": str(exc),
                             "messages": 0, "errors": 0, "underruns": 0})
            gevent.sleep(1.0)  # a refused connection must not become a busy loop
            return
        except gevent.GreenletExit:  # the run ended while the session was opening
            rec.add_session({"at": time.time(), "outcome": S.CUT, "cause": None, "failure": None,
                             "messages": 0, "errors": 0, "underruns": 0})
            raise
        self._fire("connect", (time.perf_counter() - started) * 1000)
        session = ClientSession()
        turns: list[TurnResult] = []
        failure: tuple[str, str] | None = None  # (cause, detail)
        try:
            for index in range(self.opts.turns_per_session):
                if index:
                    gevent.sleep(self.opts.turn_pause_s)
                wav = self.state.take_wav_slot()
                self.config.keep_audio = wav or self.state.verifier is not None
                result = run_turn(transport, session, self.rng.choice(load_answers()), self.config,
                                  on_message=self._on_message)
                turns.append(result)
                if result.turn_ttfa_s is not None:
                    rec.add(S.TURN_TTFA, result.turn_ttfa_s * 1000, time.time())
                if wav and result.audio:
                    self._dump_wav(session_id, session, result)
                if self.state.verifier is not None and result.records and not result.errors:
                    pcm = b"".join(result.audio.get(r.request_id, b"") for r in result.records)
                    self.state.verifier.submit(" ".join(r.text for r in result.records), pcm,
                                               result.records[0].sample_rate)
                    self.state.record_content_checks()
                if result.failure:
                    failure = (TIMEOUT if result.failure == "timeout" else STREAM_ERROR,
                               f"message {result.failure}")
                    break
            if failure is None:
                transport.send(session.close())
                closed = transport.wait_closed(timeout=10.0)
                if closed.code != 1000:
                    failure = (STREAM_ERROR, f"closed with code {closed.code} {closed.reason!r}")
        except TransportError as exc:
            failure = (cause_of(exc), str(exc))
        except gevent.GreenletExit:
            _abort(transport)  # stopped by Locust: no blocking close handshake
            self._record_session(started_wall, started, turns, session, None, cut=True)
            raise
        finally:
            if failure is not None:
                _abort(transport)
        if failure is not None:
            self._session_failed(*failure)
        self._record_session(started_wall, started, turns, session, failure)

    def _session_failed(self, cause: str, detail: str) -> None:
        self.state.failures.note(cause, detail)
        if cause in FATAL and not self.state.stopping:
            self.state.stopping = True
            log.error("bidi-tts: stopping the run: '%s' will fail every session (%s)", cause, detail)
            self.environment.process_exit_code = 1
            runner = self.environment.runner
            if runner is not None:  # headless: end the run; web UI: stop the test, keep the UI
                gevent.spawn(runner.quit if self.opts.headless else runner.stop)

    def _record_session(self, started_wall: float, started: float, turns: list[TurnResult],
                        session: ClientSession, failure: tuple[str, str] | None, *, cut: bool = False) -> None:
        from bidi_tts.metrics import percentile

        metrics = [m for t in turns for m in t.metrics]
        ttfa = [m.ttfa_s * 1000 for m in metrics if m.ttfa_s is not None]
        complete = [m.complete_s * 1000 for m in metrics if m.complete_s is not None]
        audible = [m.ttfa_audible_s * 1000 for m in metrics if m.ttfa_audible_s is not None]
        errors = sum(t.errors for t in turns)
        now = time.time()
        rec = self.state.recorder
        if failure is not None and not any(t.failure for t in turns):
            rec.add(S.SESSION_FAIL, 1.0, now)  # failed outside a message (e.g. at close)
        violations = len([v for v in session.violations if v.severity == "error"])
        if violations:
            rec.add(S.VIOLATIONS, violations, now)
        rec.add_session({
            "at": now,
            "outcome": S.CUT if cut else S.FAILED if failure else S.COMPLETED,
            "cause": failure[0] if failure else None,
            "failure": failure[1] if failure else None,
            "messages": len(metrics),
            "errors": errors,
            "underruns": sum(m.underruns.count for m in metrics),
            "ttfa_p95_ms": percentile(ttfa, 95) if ttfa else None,
            "ttfa_p99_ms": percentile(ttfa, 99) if ttfa else None,
            "ttfa_audible_p95_ms": percentile(audible, 95) if audible else None,
            "complete_p95_ms": percentile(complete, 95) if complete else None,
        })
        if turns and turns[0].records:
            rec.add_trace(_trace(started, turns))
        if not cut:
            self._fire("session", (time.perf_counter() - started) * 1000, 0,
                       SessionFailed(f"{failure[0]}: {failure[1]}") if failure else None)

    def _dump_wav(self, session_id: str, session: ClientSession, result: TurnResult) -> None:
        """One WAV per message, named by session and message, with the message's text beside it."""
        folder = Path(self.opts.report_dir or ".") / "wav"
        folder.mkdir(parents=True, exist_ok=True)
        numbers = {request_id: n for n, request_id in enumerate(session.records, start=1)}
        for record in result.records:
            pcm = result.audio.get(record.request_id)
            if not pcm:
                continue
            stem = f"session-{session_id}-message-{numbers[record.request_id]}"
            whole = bytes(pcm[: len(pcm) - len(pcm) % SAMPLE_WIDTH_BYTES])  # a broken stream's odd byte: not a sample
            write_wav(folder / f"{stem}.wav", whole, record.sample_rate)
            (folder / f"{stem}.txt").write_text(record.text + "\n", encoding="utf-8")
            self.state.wav_written += 1


def _abort(transport: Any) -> None:
    sock = getattr(getattr(transport, "_ws", None), "socket", None)
    try:
        if sock is not None:
            sock.close()
        else:
            transport.close()
    except Exception:  # best effort: the session is already lost
        pass


def _trace(started: float, turns: list[TurnResult]) -> dict[str, Any]:
    """A JSON-able timeline of one session, times in seconds from its start."""
    messages = []
    for turn in turns:
        for r in turn.records:
            messages.append({
                "text": r.text,
                "sent": r.sent_at - started,
                "first_audio": None if r.first_audio_at is None else r.first_audio_at - started,
                "completed": None if r.completed_at is None else r.completed_at - started,
                "frames": [[t - started, size] for t, size in zip(r.frame_times, r.frame_sizes, strict=True)],
                "sample_rate": r.sample_rate,
            })
    return {"turn_starts": [t.started_at - started for t in turns], "messages": messages}
