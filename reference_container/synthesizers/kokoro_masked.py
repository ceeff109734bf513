"""Kokoro's decoder-side blocks on a padded batch, masked so that no item sees another's padding.

Each function takes the same module objects that ``kokoro.istftnet`` and ``kokoro.modules`` build
(their weights, their weight-norm hooks) and runs their arithmetic on a batch whose items have
different numbers of frames. An item's valid frames are described by a :class:`Frames`; wherever
padding could leak into a valid frame, the padding is masked:

- ``norm_stats``: instance norms (AdaIN1d) take their mean and variance over each item's own
  frames, not over the padded width;
- ``conv_edges``: padding is zeroed before every convolution and transposed convolution, so the
  kernel at an item's edge sees zeros, as the unbatched call's own zero padding gives it;
- ``lstm_lengths``: recurrent layers run packed to each item's length (a bidirectional LSTM's
  backward pass would otherwise start in the padding);
- ``source_noise``: each item draws its phases and noise from its own generator, in the order and
  shapes its unbatched call draws them (only when generators are given);
- ``stft_edge``: the harmonic source is reflected past each item's end before the STFT, as
  ``torch.stft(center=True)`` reflects the unbatched call's end;
- ``har_frames``: STFT frames past an item's count are zeroed (a strided convolution reads two
  frames past the end);
- ``istft_frames``: the inverse STFT overlaps and adds only each item's own frames and normalises by
  the window envelope of those frames.

The harmonic source needs no mask of its own: its F0 curve is zero past each item's end (the
predictor's output is masked), so the phase stops accumulating there and the linear upsampling at
an item's edge reads the item's last phase, as the unbatched call's clamped edge does.

``skip`` (a set of these names) turns one off: tests only, to show that each mask matters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

MASKS = ("norm_stats", "conv_edges", "lstm_lengths", "source_noise", "stft_edge", "har_frames", "istft_frames",
         "audio_length")
INV_SQRT2 = 2 ** -0.5


def wide(x: torch.Tensor) -> torch.Tensor:
    """`x` in at least float32 (float64 stays float64): for statistics and the Fourier transforms."""
    return x if x.dtype in (torch.float32, torch.float64) else x.float()


@dataclass(frozen=True)
class Frames:
    """Valid lengths of a padded batch along its last axis, and the mask that keeps padding at zero."""

    lengths: tuple[int, ...]
    width: int
    lens: torch.Tensor | None  # the lengths on the device; None when nothing is padded
    mask: torch.Tensor | None  # [B, 1, width] float32; None when nothing is padded
    skip: frozenset[str]

    @classmethod
    def of(cls, lengths: Sequence[int], width: int, device: Any, skip: frozenset[str] = frozenset(),
           lens: torch.Tensor | None = None) -> Frames:
        """`lens`: the same lengths already on the device (saves a copy that would wait for the device)."""
        lengths = tuple(int(n) for n in lengths)
        if all(n == width for n in lengths):
            return cls(lengths, width, None, None, skip)
        if lens is None:
            lens = torch.tensor(lengths, device=device)
        mask = (torch.arange(width, device=lens.device)[None, :] < lens[:, None]).unsqueeze(1)
        return cls(lengths, width, lens, mask.to(torch.float32), skip)

    @property
    def count(self) -> torch.Tensor:
        """[B, 1, 1] valid frames per item (float32)."""
        assert self.lens is not None
        return self.lens.to(torch.float32).view(-1, 1, 1)

    def scaled(self, factor: int, extra: int = 0) -> Frames:
        """The same items after an upsampling by `factor` (and `extra` frames more each)."""
        return Frames.of([n * factor + extra for n in self.lengths], self.width * factor + extra, None, self.skip,
                         None if self.lens is None else self.lens * factor + extra)

    def zero(self, x: torch.Tensor, name: str = "conv_edges") -> torch.Tensor:
        """`x` with its padding set to zero (unless mask `name` is skipped)."""
        if self.mask is None or name in self.skip:
            return x
        return x * self.mask.to(x.dtype)


def instance_norm(norm: torch.nn.InstanceNorm1d, x: torch.Tensor, frames: Frames) -> torch.Tensor:
    """``norm(x)`` with each item's statistics over its own frames (float32 statistics)."""
    if frames.mask is None or "norm_stats" in frames.skip:
        return norm(x)
    xf = wide(x)
    m = frames.mask.to(xf.dtype)
    mean = (xf * m).sum(-1, keepdim=True) / frames.count
    var = (((xf - mean) * m) ** 2).sum(-1, keepdim=True) / frames.count
    y = (xf - mean) * torch.rsqrt(var + norm.eps)
    if norm.weight is not None:
        y = y * norm.weight.view(1, -1, 1) + norm.bias.view(1, -1, 1)
    return y.to(x.dtype)


def adain(block: Any, x: torch.Tensor, s: torch.Tensor, frames: Frames) -> torch.Tensor:
    """``AdaIN1d.forward`` with the masked instance norm."""
    h = block.fc(s).unsqueeze(-1)
    gamma, beta = torch.chunk(h, chunks=2, dim=1)
    return (1 + gamma) * instance_norm(block.norm, x, frames) + beta


def adain_resblk(block: Any, x: torch.Tensor, s: torch.Tensor, frames: Frames) -> tuple[torch.Tensor, Frames]:
    """``AdainResBlk1d.forward`` (prosody predictor and decoder blocks); returns its output's frames too."""
    out_frames = frames.scaled(2) if block.upsample_type != "none" else frames
    r = block.actv(adain(block.norm1, x, s, frames))
    r = block.pool(frames.zero(r))
    r = block.conv1(out_frames.zero(r))
    r = block.actv(adain(block.norm2, r, s, out_frames))
    r = block.conv2(out_frames.zero(r))
    shortcut = block.upsample(x)
    if block.learned_sc:
        shortcut = block.conv1x1(shortcut)
    return out_frames.zero((r + shortcut) * INV_SQRT2), out_frames


def adain_resblock1(block: Any, x: torch.Tensor, s: torch.Tensor, frames: Frames) -> torch.Tensor:
    """``AdaINResBlock1.forward`` (the generator's dilated residual blocks with Snake activations)."""
    for c1, c2, n1, n2, a1, a2 in zip(block.convs1, block.convs2, block.adain1, block.adain2,
                                      block.alpha1, block.alpha2, strict=True):
        xt = adain(n1, x, s, frames)
        xt = xt + (1 / a1) * (torch.sin(a1 * xt) ** 2)
        xt = c1(frames.zero(xt))
        xt = adain(n2, xt, s, frames)
        xt = xt + (1 / a2) * (torch.sin(a2 * xt) ** 2)
        xt = c2(frames.zero(xt))
        x = frames.zero(xt + x)
    return x


def packed_lstm(lstm: torch.nn.LSTM, x: torch.Tensor, frames: Frames) -> torch.Tensor:
    """A batch-first LSTM over [B, T, C], each item run to its own length; padding out is zero."""
    if frames.mask is None or "lstm_lengths" in frames.skip:
        return lstm(x)[0]
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    packed = pack_padded_sequence(x, torch.tensor(frames.lengths), batch_first=True, enforce_sorted=False)
    out, _ = lstm(packed)
    return pad_packed_sequence(out, batch_first=True, total_length=frames.width)[0]


def harmonic_source(source: Any, f0: torch.Tensor, samples: Frames,
                    generators: Sequence[torch.Generator] | None) -> torch.Tensor:
    """``SourceModuleHnNSF`` on f0 [B, T, 1] (samples): the merged harmonic excitation [B, T]."""
    gen = source.l_sin_gen
    batch = f0.shape[0]
    harmonics = torch.arange(1, gen.harmonic_num + 2, device=f0.device, dtype=f0.dtype)
    fn = f0 * harmonics
    rad = (fn / gen.sampling_rate) % 1
    own_noise = generators is not None and "source_noise" not in samples.skip
    if own_noise:
        assert generators is not None
        rand_ini = torch.cat([torch.rand(1, gen.dim, generator=g, device=g.device) for g in generators])
        rand_ini = rand_ini.to(f0.device, f0.dtype)
    else:
        rand_ini = torch.rand(batch, gen.dim, device=f0.device, dtype=f0.dtype)
    rand_ini[:, 0] = 0
    rad[:, 0, :] = rad[:, 0, :] + rand_ini
    rad = F.interpolate(rad.transpose(1, 2), scale_factor=1 / gen.upsample_scale, mode="linear").transpose(1, 2)
    phase = torch.cumsum(rad, dim=1) * 2 * torch.pi
    phase = F.interpolate(phase.transpose(1, 2) * gen.upsample_scale, scale_factor=gen.upsample_scale,
                          mode="linear").transpose(1, 2)
    sines = torch.sin(phase) * gen.sine_amp
    uv = (f0 > gen.voiced_threshold).to(f0.dtype)
    noise_amp = uv * gen.noise_std + (1 - uv) * gen.sine_amp / 3
    if own_noise:
        assert generators is not None
        draws = torch.zeros_like(sines)
        for row, (g, n) in enumerate(zip(generators, samples.lengths, strict=True)):
            # SineGen's randn_like keeps its input's [1, dim, n] memory layout, and torch draws a
            # non-contiguous tensor element by element (another sequence than a contiguous one's)
            draw = torch.empty_strided((1, n, gen.dim), (gen.dim * n, 1, n), device=g.device,
                                       dtype=sines.dtype).normal_(generator=g)
            draws[row, :n] = draw.to(f0.device, f0.dtype)[0]
    else:
        draws = torch.randn_like(sines)
    sine_waves = sines * uv + noise_amp * draws
    return torch.tanh(source.l_linear(sine_waves)).squeeze(-1)


def stft(har: torch.Tensor, stft_module: Any, samples: Frames, frames: Frames) -> torch.Tensor:
    """Magnitude and phase of the harmonic source [B, n_fft + 2, frames.width], per item as
    ``torch.stft(center=True)`` sees the item alone."""
    n_fft = stft_module.filter_length
    half = n_fft // 2
    har = wide(har)
    if samples.mask is not None:  # room past the longest item's end, for the reflection of each end
        har = F.pad(har, (0, half))
    if samples.mask is not None and "stft_edge" not in samples.skip:
        assert samples.lens is not None
        ends = samples.lens.view(-1, 1)
        k = torch.arange(half, device=har.device).view(1, -1)
        har = har.scatter(1, ends + k, har.gather(1, ends - 2 - k))
    window = stft_module.window.to(har.device, har.dtype)
    spec = torch.stft(har, n_fft, stft_module.hop_length, stft_module.win_length, window=window,
                      return_complex=True)[..., : frames.width]
    out = torch.cat([spec.abs(), spec.angle()], dim=1)
    return frames.zero(out, "har_frames")


def istft(magnitude: torch.Tensor, phase: torch.Tensor, stft_module: Any, frames: Frames) -> torch.Tensor:
    """``torch.istft(center=True)`` per item on [B, n_fft/2 + 1, T] magnitude and phase: the
    overlap-add of the inverse FFTs, divided by the window envelope of the item's own frames.
    Returns [B, hop * (T - 1)] (each item valid for hop * (its frames - 1) samples)."""
    n_fft, hop = stft_module.filter_length, stft_module.hop_length
    magnitude, phase = wide(magnitude), wide(phase)
    window = stft_module.window.to(magnitude.device, magnitude.dtype)
    spec = torch.polar(frames.zero(magnitude, "istft_frames"), phase)
    chunks = torch.fft.irfft(spec, n=n_fft, dim=1) * window.view(1, -1, 1)  # [B, n_fft, T]
    width = chunks.shape[-1]
    total = n_fft + hop * (width - 1)
    fold = {"output_size": (1, total), "kernel_size": (1, n_fft), "stride": (1, hop)}
    y = F.fold(chunks, **fold).view(chunks.shape[0], total)
    present = frames.zero(torch.ones(chunks.shape[0], 1, width, device=chunks.device, dtype=chunks.dtype),
                          "istft_frames")
    envelope = F.fold((window ** 2).view(1, -1, 1) * present, **fold).view(chunks.shape[0], total)
    half = n_fft // 2
    y, envelope = y[:, half: total - half], envelope[:, half: total - half]
    return y / torch.where(envelope > 1e-11, envelope, torch.ones_like(envelope))
