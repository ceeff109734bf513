"""Log-mel distance between two renderings of the same utterance (torch route vs ONNX route).

Why this measure: Kokoro's vocoder starts from a harmonic source with random initial phases and
additive noise (``SineGen``: ``torch.rand`` / ``torch.randn``), so two correct renderings of the same
tokens are not equal sample by sample (their correlation is near zero) yet have the same spectral
envelope frame by frame: same durations, same formants, same pitch contour. A log-mel spectrogram
keeps exactly that and drops the phase. The two routes' durations can differ by a frame here and
there (int8 activations on the ONNX side round the predicted durations differently), which would
shift every later frame, so the frames are first paired by dynamic time warping (steps (1,1), (1,2),
(2,1): slopes between 1/2 and 2), as in the usual TTS measure "mel cepstral distortion with DTW".

``log_mel_distance_db``: mean absolute difference in dB over 80 mel bands (0-8 kHz, 1024-point FFT,
hop 256 at 24 kHz) along the DTW path, each spectrogram floored FLOOR_DB below its own peak so the
noise floor of silence and of empty bands does not dominate.
"""

from __future__ import annotations

import numpy as np

SAMPLE_RATE = 24_000
N_FFT = 1024
HOP = 256
N_MELS = 80
FLOOR_DB = 60.0


def _hz_to_mel(f: np.ndarray) -> np.ndarray:
    return 2595.0 * np.log10(1.0 + f / 700.0)


def _mel_to_hz(m: np.ndarray) -> np.ndarray:
    return 700.0 * (10.0 ** (m / 2595.0) - 1.0)


def mel_filterbank(sample_rate: int = SAMPLE_RATE, n_fft: int = N_FFT, n_mels: int = N_MELS,
                   fmax: float = 8000.0) -> np.ndarray:
    """Triangular mel filters, `[n_mels, n_fft // 2 + 1]`."""
    bins = np.fft.rfftfreq(n_fft, 1.0 / sample_rate)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(np.array(0.0)), _hz_to_mel(np.array(fmax)), n_mels + 2))
    fb = np.zeros((n_mels, bins.size))
    for i in range(n_mels):
        lo, mid, hi = edges[i], edges[i + 1], edges[i + 2]
        fb[i] = np.clip(np.minimum((bins - lo) / (mid - lo), (hi - bins) / (hi - mid)), 0.0, None)
    return fb


_FB = mel_filterbank()


def log_mel_db(audio: np.ndarray) -> np.ndarray:
    """`[frames, N_MELS]` log-mel power in dB, floored FLOOR_DB below its peak."""
    x = np.asarray(audio, dtype=np.float64).reshape(-1)
    if x.size < N_FFT:
        x = np.pad(x, (0, N_FFT - x.size))
    frames = np.lib.stride_tricks.sliding_window_view(x, N_FFT)[::HOP] * np.hanning(N_FFT)
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    db = 10.0 * np.log10(np.maximum(power @ _FB.T, 1e-12))
    return np.maximum(db, db.max() - FLOOR_DB)


def dtw_mean_cost(cost: np.ndarray) -> float:
    """Mean cost along the cheapest path from (0, 0) to (n-1, m-1) with steps (1,1), (1,2), (2,1).

    Infinite when there is no such path (one side more than twice as long as the other).
    """
    n, m = cost.shape
    total = np.full((n, m), np.inf)
    steps = np.zeros((n, m))
    total[0, 0], steps[0, 0] = cost[0, 0], 1
    for i in range(1, n):
        cands = [(total[i - 1, :-1], steps[i - 1, :-1], 1)]  # from (i-1, j-1)
        cands.append((total[i - 1, :-2], steps[i - 1, :-2], 2))  # from (i-1, j-2)
        if i >= 2:
            cands.append((total[i - 2, :-1], steps[i - 2, :-1], 1))  # from (i-2, j-1)
        best = np.full(m, np.inf)
        best_steps = np.zeros(m)
        for prev_total, prev_steps, shift in cands:
            padded = np.full(m, np.inf)
            padded[shift:] = prev_total[: m - shift]
            padded_steps = np.zeros(m)
            padded_steps[shift:] = prev_steps[: m - shift]
            better = padded < best
            best = np.where(better, padded, best)
            best_steps = np.where(better, padded_steps, best_steps)
        total[i] = best + cost[i]
        steps[i] = best_steps + 1
    if not np.isfinite(total[-1, -1]):
        return float("inf")  # lengths differ by more than a factor of 2: no path, as far apart as can be
    return float(total[-1, -1] / steps[-1, -1])


def log_mel_distance_db(a: np.ndarray, b: np.ndarray) -> float:
    """Mean |dB| between the log-mel spectrograms of `a` and `b`, frames paired by DTW."""
    ma, mb = log_mel_db(a), log_mel_db(b)
    cost = np.abs(ma[:, None, :] - mb[None, :, :]).mean(axis=2)
    return dtw_mean_cost(cost)
