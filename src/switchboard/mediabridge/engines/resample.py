"""Streaming resamplers for integer ratios (8 → 16 kHz, 24 → 8 kHz), one per call and direction.

A windowed-sinc low-pass FIR (Kaiser window) runs at the upsampled rate; the state between
chunks is the filter's history and the decimation phase, so chunks of any size give the same
output as the whole signal at once, with a delay of half the filter (about 1.5 ms), not the
100 ms blocks a general-purpose streaming resampler (soxr) buffers at these rates.
"""

from __future__ import annotations

import numpy as np

TAPS_PER_PHASE = 24
KAISER_BETA = 8.0
PASSBAND = 0.9  # of the lower Nyquist frequency: 3.6 kHz at 8 kHz, above telephone band


class StreamResampler:
    """PCM16 mono from ``rate_in`` to ``rate_out`` where one divides the other.

    Upsampling by L filters the input once per output phase (polyphase: no zero-stuffed
    signal) and interleaves the phases; downsampling filters at the input rate and keeps every
    M-th sample. The filter's history and the decimation phase carry over between chunks.
    """

    def __init__(self, rate_in: int, rate_out: int) -> None:
        if rate_out % rate_in and rate_in % rate_out:
            raise ValueError(f"{rate_in} → {rate_out} Hz is not an integer ratio")
        self.up = max(rate_out // rate_in, 1)
        self.down = max(rate_in // rate_out, 1)
        factor = max(self.up, self.down)
        taps = TAPS_PER_PHASE * factor + 1
        cutoff = PASSBAND * 0.5 / factor  # in cycles per sample of the upsampled stream
        n = np.arange(taps) - (taps - 1) / 2
        kernel = 2 * cutoff * np.sinc(2 * cutoff * n) * np.kaiser(taps, KAISER_BETA)
        kernel *= self.up / kernel.sum()
        # Output phase p of the upsampled stream is the input filtered by kernel[p::up].
        per_phase = -(-taps // self.up)
        padded = np.zeros(per_phase * self.up)
        padded[:taps] = kernel
        self._phases = [padded[p :: self.up] for p in range(self.up)]
        self._history = np.zeros(per_phase - 1)
        self._phase = 0

    def __call__(self, pcm: bytes) -> bytes:
        """Resample one chunk (PCM16 little-endian, an even number of bytes)."""
        samples = np.frombuffer(pcm, dtype="<i2")
        if not len(samples):
            return b""
        window = np.concatenate((self._history, samples))
        self._history = window[len(window) - len(self._history) :]
        if self.up > 1:
            out = np.empty(len(samples) * self.up)
            for p, phase in enumerate(self._phases):
                out[p :: self.up] = np.convolve(window, phase, mode="valid")
        else:
            filtered = np.convolve(window, self._phases[0], mode="valid")
            out = filtered[self._phase :: self.down]
            self._phase = (self._phase - len(filtered)) % self.down
        return np.rint(out, out=out).clip(-32768, 32767).astype("<i2").tobytes()
