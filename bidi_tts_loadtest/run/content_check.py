"""Hear a sample of the load test's messages, off the hot path: ``ContentVerifier(every=N)``.

Every Nth submitted message (text, PCM, sample rate) is handed to a worker process that transcribes it
with the content checks' recognizer (bidi_tts_hearing: faster-whisper, Whisper base, offline) and
judges it like the content.* cases: a sentence dropped, repeated, swapped or cut off, another text's
words, or a word error rate above ``MAX_WER`` is a content error, counted by cause.

Why this shape: Locust runs on gevent, so the caller's side only appends to a deque and writes one
byte to a wake-up pipe; a native OS thread (started with the unpatched ``_thread``) moves jobs to the
worker over plain pipes and collects its answers, and the worker runs at a lower CPU priority
(``nice`` +10) so recognition takes only CPU the generator leaves. When the worker falls behind,
messages beyond ``max_pending`` are not checked (counted as ``skipped_busy``) rather than queued
without bound. Cost and effect on timing: docs/content.md.

The worker is this module: ``python -m bidi_tts_loadtest.run.content_check --worker``.
"""

from __future__ import annotations

import collections
import json
import os
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from bidi_tts.deadline import Deadline

MAX_WER = 0.5  # per message; looser than content.intelligible.1's 0.35: load-test texts have names, prices
MAX_EXAMPLES = 20
_HEADER = struct.Struct("<II")  # JSON header length, PCM length


def _original_start_thread() -> Any:
    try:
        from gevent import monkey

        if monkey.is_module_patched("threading"):
            return monkey.get_original("_thread", "start_new_thread")
    except ImportError:
        pass
    import _thread

    return _thread.start_new_thread


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


@dataclass
class ContentCheckResult:
    """The judgement of one sampled message."""

    text: str
    heard: str
    wer: float
    kinds: list[str]
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.kinds


@dataclass
class ContentVerifier:
    """Transcribes every `every`-th submitted message in a worker process; counts content errors."""

    every: int
    max_pending: int = 4
    ready_timeout_s: float = 120.0
    submitted: int = 0
    skipped_busy: int = 0
    _jobs: collections.deque[tuple[str, bytes, int]] = field(default_factory=collections.deque)
    _results: collections.deque[ContentCheckResult] = field(default_factory=collections.deque)
    _unreported: collections.deque[ContentCheckResult] = field(default_factory=collections.deque)
    _in_flight: int = 0
    _failure: str | None = None
    _ready: bool = False

    def __post_init__(self) -> None:
        if self.every < 1:
            raise ValueError(f"--verify-audio-every must be at least 1, got {self.every}")
        to_worker_r, self._to_worker = os.pipe()
        self._from_worker, from_worker_w = os.pipe()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._proc = subprocess.Popen([sys.executable, "-m", "bidi_tts_loadtest.run.content_check", "--worker"],
                                      stdin=to_worker_r, stdout=from_worker_w, close_fds=True)
        os.close(to_worker_r)
        os.close(from_worker_w)
        self._reader: BinaryIO = os.fdopen(self._from_worker, "rb", buffering=0)
        _original_start_thread()(self._serve, ())

    # -- the caller's side (greenlets): never blocks --------------------------------------------
    def submit(self, text: str, pcm: bytes | bytearray, sample_rate: int) -> bool:
        """Count a finished message; every `every`-th one is queued for checking. True when queued."""
        self.submitted += 1
        if self.submitted % self.every or not text.strip():
            return False
        if len(self._jobs) + self._in_flight >= self.max_pending or self._failure is not None:
            self.skipped_busy += 1
            return False
        self._jobs.append((text, bytes(pcm), sample_rate))
        try:
            os.write(self._wake_w, b"j")
        except BlockingIOError:  # the wake-up pipe is full: the thread is awake anyway
            pass
        return True

    def wait_ready(self) -> None:
        """Wait until the worker has loaded its model; raise RuntimeError with its reason if it cannot."""
        deadline = Deadline(self.ready_timeout_s)
        while not self._ready and self._failure is None:
            if deadline.expired:
                self._failure = f"the content-check worker did not load its model in {self.ready_timeout_s:.0f} s"
            time.sleep(0.05)
        if self._failure is not None:
            raise RuntimeError(self._failure)

    def drain(self, timeout_s: float = 60.0) -> None:
        """Wait (up to `timeout_s`) until every queued message has been checked."""
        deadline = Deadline(timeout_s)
        while (self._jobs or self._in_flight) and self._failure is None and not deadline.expired:
            time.sleep(0.05)

    def take_results(self) -> list[ContentCheckResult]:
        """The judgements finished since the last call (for a caller that records them elsewhere)."""
        taken = []
        while self._unreported:
            taken.append(self._unreported.popleft())
        return taken

    @property
    def results(self) -> list[ContentCheckResult]:
        return list(self._results)

    @property
    def checked(self) -> int:
        return len(self._results)

    @property
    def content_errors(self) -> int:
        return sum(1 for r in self._results if not r.ok)

    def summary(self) -> dict[str, Any]:
        """For the run's summary JSON: counts, errors by cause, a few examples."""
        results = list(self._results)
        causes = collections.Counter(kind for r in results for kind in dict.fromkeys(r.kinds))
        return {
            "every": self.every,
            "submitted": self.submitted,
            "checked": len(results),
            "skipped_busy": self.skipped_busy + len(self._jobs),
            "content_errors": sum(1 for r in results if not r.ok),
            "causes": dict(causes),
            "examples": [{"text": r.text, "heard": r.heard, "wer": round(r.wer, 3), "problems": r.problems}
                         for r in results if not r.ok][:MAX_EXAMPLES],
            "worker_failure": self._failure,
        }

    def close(self) -> None:
        """Stop the worker (the queued but unchecked messages stay unchecked)."""
        self._jobs.clear()
        for fd in (self._to_worker, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10)

    # -- the native thread: moves jobs to the worker and answers back ----------------------------
    def _serve(self) -> None:
        try:
            ready = self._read_answer()
            if "error" in ready:
                self._failure = str(ready["error"])
                return
            self._ready = True
            while True:
                if not self._jobs:
                    if not os.read(self._wake_r, 4096):
                        return
                    continue
                self._in_flight = 1  # before popleft: drain() must never see neither
                text, pcm, rate = self._jobs.popleft()
                header = json.dumps({"text": text, "sample_rate": rate}).encode()
                _write_all(self._to_worker, _HEADER.pack(len(header), len(pcm)) + header + pcm)
                answer = self._read_answer()
                result = ContentCheckResult(text, answer["heard"], answer["wer"], answer["kinds"], answer["problems"])
                self._results.append(result)
                self._unreported.append(result)
                self._in_flight = 0
        except (OSError, ValueError, KeyError) as exc:
            if self._failure is None:
                self._failure = f"the content-check worker stopped: {type(exc).__name__}"
        finally:
            self._in_flight = 0
            try:
                os.close(self._wake_r)
            except OSError:
                pass

    def _read_answer(self) -> dict[str, Any]:
        line = self._reader.readline()
        if not line:
            raise OSError("the content-check worker exited")
        return dict(json.loads(line))


# -- the worker process ---------------------------------------------------------------------------
def judge(text: str, heard: str) -> ContentCheckResult:
    """A content error: a sentence dropped, repeated, swapped or cut off, or too many wrong words."""
    from bidi_tts.chunker import split_sentences
    from bidi_tts_hearing import hear

    hearing = hear(split_sentences(text) or [text], heard)
    if hearing.wer > MAX_WER and not hearing.kinds:
        hearing.add("wrong words", f"wrong words: word error rate {hearing.wer:.2f} > {MAX_WER}")
    return ContentCheckResult(text, heard, hearing.wer, hearing.kinds, hearing.problems)


def _read_exact(stream: BinaryIO, size: int) -> bytes | None:
    data = stream.read(size)
    return data if len(data) == size else None


def worker(stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Serve jobs from `stdin` until it closes: one JSON line per job on `stdout`, after a ready line."""
    try:
        os.nice(10)
    except OSError:
        pass
    from bidi_tts_hearing import ModelUnavailable, recognizer

    try:
        ears = recognizer()
    except ModelUnavailable as exc:
        stdout.write(json.dumps({"error": f"no speech recognizer for --verify-audio-every: {exc}"}).encode() + b"\n")
        stdout.flush()
        return 1
    stdout.write(b'{"ready": true}\n')
    stdout.flush()
    while (head := _read_exact(stdin, _HEADER.size)) is not None:
        header_len, pcm_len = _HEADER.unpack(head)
        header = json.loads(_read_exact(stdin, header_len) or b"{}")
        pcm = _read_exact(stdin, pcm_len) or b""
        result = judge(header["text"], ears.transcribe(pcm, int(header["sample_rate"])))
        stdout.write(json.dumps({"heard": result.heard, "wer": result.wer, "kinds": result.kinds,
                                 "problems": result.problems}).encode() + b"\n")
        stdout.flush()
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["--worker"]:
        sys.exit("usage: python -m bidi_tts_loadtest.run.content_check --worker (started by ContentVerifier)")
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever a library prints must not corrupt the answers
    sys.exit(worker(sys.stdin.buffer, answers))
