"""Batch the model calls of several sessions into one forward pass (torch route).

:func:`batched_forward` runs KModel's text side for a whole batch at once: ALBERT with an attention
mask, the text and duration encoders (which already mask and pack by length), and the duration
LSTM packed by length, so padding never leaks into a real token. The decoder then runs per item on
exactly that item's frames: Kokoro's decoder normalises over time (InstanceNorm in AdaIN1d) and its
convolutions would see padded frames, so batching it would change every sample of the shorter
items. Outputs equal the unbatched ones up to float rounding (checked on the random-init model,
``tests/container/test_torch_batch.py``).

:class:`Batcher` collects calls from the synthesis worker threads: the first call of a batch waits
at most `window_s` for others (never longer; a full batch leaves at once), then one forward pass
serves them all. :class:`BatchedModel` is what a ``KPipeline`` is handed instead of the model, so
G2P and chunking stay the pipeline's own.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class ModelCall:
    phonemes: str
    ref_s: Any  # torch [1, 256]
    speed: float
    result: Future[Any] = field(default_factory=Future)


def batched_forward(model: Any, calls: list[ModelCall]) -> list[Any]:
    """One KModel forward for several (phonemes, style, speed) calls; a ``KModel.Output`` each."""
    import torch
    from kokoro.model import KModel
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    device = model.device
    ids = [[0, *(model.vocab[p] for p in c.phonemes if p in model.vocab), 0] for c in calls]
    width = max(map(len, ids))
    input_ids = torch.zeros((len(ids), width), dtype=torch.long, device=device)
    for row, seq in enumerate(ids):
        input_ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    lengths = torch.tensor([len(seq) for seq in ids], dtype=torch.long, device=device)
    text_mask = torch.arange(width, device=device).unsqueeze(0) + 1 > lengths.unsqueeze(1)  # True: padding
    ref_s = torch.cat([c.ref_s.to(device) for c in calls])
    speed = torch.tensor([c.speed for c in calls], dtype=torch.float32, device=device)
    style = ref_s[:, 128:]

    bert_dur = model.bert(input_ids, attention_mask=(~text_mask).int())
    d_en = model.bert_encoder(bert_dur).transpose(-1, -2)
    d = model.predictor.text_encoder(d_en, style, lengths, text_mask)
    packed = pack_padded_sequence(d, lengths.cpu(), batch_first=True, enforce_sorted=False)
    x, _ = model.predictor.lstm(packed)
    x, _ = pad_packed_sequence(x, batch_first=True, total_length=width)
    duration = torch.sigmoid(model.predictor.duration_proj(x)).sum(dim=-1) / speed.unsqueeze(1)
    pred_dur = torch.round(duration).clamp(min=1).long()
    t_en = model.text_encoder(input_ids, lengths, text_mask)

    outputs = []
    for row, seq in enumerate(ids):
        n = len(seq)
        dur = pred_dur[row, :n]
        frames = torch.repeat_interleave(torch.arange(n, device=device), dur)
        aln = torch.zeros((n, frames.shape[0]), device=device)
        aln[frames, torch.arange(frames.shape[0], device=device)] = 1
        aln = aln.unsqueeze(0)
        en = d[row : row + 1, :n].transpose(-1, -2) @ aln
        f0, noise = model.predictor.F0Ntrain(en, style[row : row + 1])
        asr = t_en[row : row + 1, :, :n] @ aln
        audio = model.decoder(asr, f0, noise, ref_s[row : row + 1, :128]).squeeze()
        outputs.append(KModel.Output(audio=audio.cpu(), pred_dur=dur.cpu()))
    return outputs


def _torch_forward(model: Any) -> Callable[[list[ModelCall]], list[Any]]:
    def forward(batch: list[ModelCall]) -> list[Any]:
        import torch

        with torch.inference_mode():
            return batched_forward(model, batch)

    return forward


class Batcher:
    """Gathers model calls from worker threads into batches of at most `max_batch`, waiting `window_s`.

    `forward` runs one batch (a result per call, in order); by default :func:`batched_forward` on
    `model` under ``torch.inference_mode``. The timed synthesizer passes its own, so both backends
    batch through this one class.
    """

    def __init__(self, model: Any, *, window_s: float, max_batch: int,
                 forward: Callable[[list[ModelCall]], list[Any]] | None = None) -> None:
        if window_s < 0 or max_batch < 1:
            raise ValueError("window_s must be >= 0 and max_batch >= 1")
        self.model = model
        self._forward = forward or _torch_forward(model)
        self.window_s = window_s
        self.max_batch = max_batch
        self.batch_sizes: list[int] = []
        self._calls: queue.Queue[ModelCall] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="synth-batcher", daemon=True)
        self._thread.start()

    def __call__(self, phonemes: str, ref_s: Any, speed: float) -> Any:
        call = ModelCall(phonemes, ref_s, float(speed))
        self._calls.put(call)
        return call.result.result()

    def _loop(self) -> None:
        while True:
            batch = [self._calls.get()]
            closes_at = time.perf_counter() + self.window_s
            while len(batch) < self.max_batch:
                wait = closes_at - time.perf_counter()
                try:
                    batch.append(self._calls.get(timeout=wait) if wait > 0 else self._calls.get_nowait())
                except queue.Empty:
                    break
            self.batch_sizes.append(len(batch))
            try:
                outputs = self._forward(batch)
            except Exception as exc:  # every caller sees the failure; the scheduler logs it
                for call in batch:
                    call.result.set_exception(exc)
                continue
            for call, output in zip(batch, outputs, strict=True):
                call.result.set_result(output)


class BatchedModel:
    """Stands in for KModel inside KPipeline: its calls go through a :class:`Batcher`."""

    def __init__(self, batcher: Batcher) -> None:
        self.batcher = batcher
        self.device = batcher.model.device

    def __call__(self, phonemes: str, ref_s: Any, speed: float = 1.0, return_output: bool = False) -> Any:
        output = self.batcher(phonemes, ref_s, speed)
        return output if return_output else output.audio
