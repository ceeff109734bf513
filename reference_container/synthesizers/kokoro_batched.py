"""The whole Kokoro-82M forward on a batch of units of different lengths, each item as if alone.

:func:`forward_batch` runs ``KModel.forward_with_tokens`` for B units in one pass, every tensor
batched, the decoder included: token ids padded to the longest unit (ALBERT, the text and duration
encoders and the duration LSTM mask or pack by length, as ``KModel`` already does), then each
unit's frames padded to the most frames, with the decoder's masks (:mod:`.kokoro_masked`) wherever
padding could leak into an item: instance-norm statistics, convolution edges, recurrent lengths,
the harmonic source's phase and noise, the STFT's edge, the inverse STFT's envelope. Each item's
audio is cut to its own length. Equal to the unbatched call per item up to float rounding, under
the same noise (``tests/container/test_kokoro_batched.py``, real weights).

Differences from ``KModel`` that change no output: the alignment is a gather (the one-hot matmul
picks the same values), the constants the decoder made on the CPU per call (``torch.tensor(2)``,
the harmonic numbers) are made on the device, and no tensor crosses to the host inside the
decoder; one sync reads the durations, to size the frames.

Precision (:data:`PRECISIONS`): ``fp32``; ``tf32`` (float32 tensors, TensorFloat-32 matrix units
on CUDA); ``bf16`` (autocast to bfloat16 on CUDA; norms' statistics, the STFT and its inverse stay
float32).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from reference_container.synthesizers.kokoro_masked import (
    Frames,
    adain_resblk,
    adain_resblock1,
    harmonic_source,
    istft,
    packed_lstm,
    stft,
    wide,
)

PRECISIONS = ("fp32", "tf32", "bf16")


@dataclass(slots=True)
class Unit:
    """One model call: token ids with the 0 at both ends, a style row [1, 256], a speed."""

    ids: Sequence[int]
    ref_s: torch.Tensor
    speed: float = 1.0
    generator: torch.Generator | None = field(default=None, repr=False)


def token_ids(vocab: dict[str, int], phonemes: str) -> list[int]:
    """``KModel.forward``'s ids: known symbols only, with 0 at both ends."""
    return [0, *(vocab[p] for p in phonemes if p in vocab), 0]


def precision_support(device: str) -> dict[str, str]:
    """Each precision mode and whether `device` runs it ('ok' or why not)."""
    cuda = str(device).startswith("cuda")
    return {"fp32": "ok",
            "tf32": "ok" if cuda else "TF32 is a CUDA matrix-unit mode; the CPU runs plain float32",
            "bf16": "ok" if cuda else "bf16 autocast is offered on CUDA only (slower than fp32 on this CPU)"}


@contextlib.contextmanager
def precision(mode: str, device: str) -> Iterator[None]:
    """The numeric mode for one pass; raises ValueError for a mode `device` does not support."""
    if mode not in PRECISIONS:
        raise ValueError(f"unknown precision {mode!r} (choose from {', '.join(PRECISIONS)})")
    why = precision_support(device)[mode]
    if why != "ok":
        raise ValueError(f"--precision {mode} on {device}: {why}")
    if mode == "fp32":
        yield
        return
    if mode == "tf32":
        old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old
        return
    with torch.autocast("cuda", dtype=torch.bfloat16):
        yield


@dataclass(frozen=True, slots=True)
class BatchOutput:
    audio: list[torch.Tensor]  # per unit, float32 on the CPU
    pred_dur: list[torch.Tensor]
    frames: tuple[int, ...]
    padded_frames: int  # the batch's frame width: padding costs (width * B - sum(frames)) frames


def forward_batch(model: Any, units: Sequence[Unit], *, skip: frozenset[str] = frozenset()) -> BatchOutput:
    """``KModel.forward_with_tokens`` for every unit in one pass; see the module docstring.

    `skip`: masks to leave out (:data:`~.kokoro_masked.MASKS`), for tests that show each one matters.
    """
    device = model.device
    batch = len(units)
    lengths = [len(u.ids) for u in units]
    width = max(lengths)
    input_ids = torch.zeros((batch, width), dtype=torch.long)
    for row, unit in enumerate(units):
        input_ids[row, : len(unit.ids)] = torch.as_tensor(list(unit.ids), dtype=torch.long)
    input_ids = input_ids.to(device, non_blocking=True)
    lens = torch.tensor(lengths, dtype=torch.long).to(device)
    text_mask = torch.arange(width, device=device)[None, :] + 1 > lens[:, None]  # True: padding
    ref_s = torch.cat([u.ref_s for u in units]).to(device, next(model.parameters()).dtype)
    speed = torch.tensor([u.speed for u in units], dtype=ref_s.dtype).to(device)
    style, timbre = ref_s[:, 128:], ref_s[:, :128]
    tokens = Frames.of(lengths, width, device, skip, lens=lens)

    bert = model.bert(input_ids, attention_mask=(~text_mask).int())
    d_en = model.bert_encoder(bert).transpose(-1, -2)
    d = model.predictor.text_encoder(d_en, style, lens, text_mask)  # [B, W, 640], packed by length
    x = packed_lstm(model.predictor.lstm, d, tokens)
    duration = torch.sigmoid(wide(model.predictor.duration_proj(x))).sum(dim=-1) / speed[:, None]
    pred_dur = torch.round(duration).clamp(min=1).long() * (~text_mask)
    t_en = model.text_encoder(input_ids, lens, text_mask)  # [B, 512, W], zero past each length

    ends = pred_dur.cumsum(dim=1)
    frame_counts = ends[:, -1].tolist()  # the one sync: frames size everything after this
    frames = Frames.of(frame_counts, max(frame_counts), device, skip, lens=ends[:, -1])
    at = torch.arange(frames.width, device=device).expand(batch, -1).contiguous()
    token_of_frame = torch.searchsorted(ends, at, right=True).clamp(max=width - 1)  # [B, F]
    en = frames.zero(d.transpose(-1, -2).gather(2, token_of_frame[:, None, :].expand(-1, d.shape[-1], -1)))
    asr = frames.zero(t_en.gather(2, token_of_frame[:, None, :].expand(-1, t_en.shape[1], -1)))

    f0_curve, noise_curve = _f0_n(model.predictor, en, style, frames)
    generators = [u.generator for u in units if u.generator is not None]
    audio = _decode(model.decoder, asr, f0_curve, noise_curve, timbre, frames,
                    generators if len(generators) == batch else None)
    audio = audio.float().cpu()
    samples = [n * _samples_per_frame(model) for n in frame_counts]
    per_unit = [audio[row] if "audio_length" in skip else audio[row, :n] for row, n in enumerate(samples)]
    durations = pred_dur.cpu()
    return BatchOutput(per_unit, [durations[row, :n] for row, n in enumerate(lengths)], tuple(frame_counts),
                       frames.width)


def _samples_per_frame(model: Any) -> int:
    gen = model.decoder.generator
    return 2 * gen.m_source.l_sin_gen.upsample_scale  # frames are upsampled x2 before the generator


def _f0_n(predictor: Any, en: torch.Tensor, style: torch.Tensor, frames: Frames) -> tuple[torch.Tensor, torch.Tensor]:
    """``ProsodyPredictor.F0Ntrain``: F0 and noise curves [B, 2F], zero past each item's 2 x frames."""
    x = packed_lstm(predictor.shared, en.transpose(-1, -2), frames).transpose(-1, -2)
    curves = []
    for blocks, proj in ((predictor.F0, predictor.F0_proj), (predictor.N, predictor.N_proj)):
        y, at = x, frames
        for block in blocks:
            y, at = adain_resblk(block, y, style, at)
        curves.append(at.zero(proj(y)).squeeze(1))
    return curves[0], curves[1]


def _decode(decoder: Any, asr: torch.Tensor, f0_curve: torch.Tensor, n_curve: torch.Tensor, s: torch.Tensor,
            frames: Frames, generators: list[torch.Generator] | None) -> torch.Tensor:
    """``Decoder.forward``: features to audio [B, samples of the longest item]."""
    f0 = frames.zero(decoder.F0_conv(f0_curve.unsqueeze(1)))
    n = frames.zero(decoder.N_conv(n_curve.unsqueeze(1)))
    x, at = adain_resblk(decoder.encode, torch.cat([asr, f0, n], dim=1), s, frames)
    asr_res = frames.zero(decoder.asr_res(asr))
    residual = True
    for block in decoder.decode:
        if residual:
            x = torch.cat([x, asr_res, f0, n], dim=1)
        x, at = adain_resblk(block, x, s, at)
        if block.upsample_type != "none":
            residual = False
    return _generate(decoder.generator, x, s, f0_curve, at, generators)


def _generate(gen: Any, x: torch.Tensor, s: torch.Tensor, f0_curve: torch.Tensor, frames: Frames,
              generators: list[torch.Generator] | None) -> torch.Tensor:
    """``Generator.forward`` on x [B, C, 2F] with `frames` its valid lengths."""
    scale = gen.m_source.l_sin_gen.upsample_scale
    samples = frames.scaled(scale)
    f0 = F.interpolate(wide(f0_curve)[:, None], scale_factor=scale, mode="nearest").transpose(1, 2)
    har_source = harmonic_source(gen.m_source, f0, samples, generators)
    hop = gen.stft.hop_length
    har_frames = Frames.of([n // hop + 1 for n in samples.lengths], samples.width // hop + 1, x.device, frames.skip,
                           None if samples.lens is None else samples.lens // hop + 1)
    har = stft(har_source, gen.stft, samples, har_frames).to(x.dtype)
    at = frames
    for i in range(gen.num_upsamples):
        x = F.leaky_relu(x, negative_slope=0.1)
        up = gen.ups[i]
        stride = up.stride[0]
        last = i == gen.num_upsamples - 1
        at = at.scaled(stride, 1 if last else 0)
        x_source = gen.noise_convs[i](har)
        x_source = adain_resblock1(gen.noise_res[i], at.zero(x_source), s, at)
        x = up(x)
        if last:
            x = gen.reflection_pad(x)
        x = at.zero(x + x_source)
        xs = sum(adain_resblock1(gen.resblocks[i * gen.num_kernels + j], x, s, at) for j in range(gen.num_kernels))
        x = at.zero(xs / gen.num_kernels)
    x = gen.conv_post(F.leaky_relu(x))
    half = gen.post_n_fft // 2 + 1
    return istft(torch.exp(wide(x[:, :half])), torch.sin(wide(x[:, half:])), gen.stft, at)
