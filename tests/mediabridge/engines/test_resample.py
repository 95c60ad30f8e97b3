"""The streaming resamplers keep pitch, reject what the lower rate cannot carry, and give the
same audio whatever the chunk sizes."""

from __future__ import annotations

import numpy as np
import pytest

from switchboard.mediabridge.engines.resample import StreamResampler


def tone(freq: float, rate: int, seconds: float, amplitude: float = 8000) -> bytes:
    t = np.arange(int(rate * seconds)) / rate
    return (amplitude * np.sin(2 * np.pi * freq * t)).astype("<i2").tobytes()


def spectrum_peak(pcm: bytes, rate: int) -> tuple[float, float]:
    """(loudest frequency, RMS level) of PCM16 audio."""
    x = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    magnitude = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.fft.rfftfreq(len(x), 1 / rate)[magnitude.argmax()]), float(
        np.sqrt((x**2).mean())
    )


@pytest.mark.parametrize(("rate_in", "rate_out", "chunk"), [(8000, 16000, 320), (24000, 8000, 962)])
def test_a_tone_keeps_its_pitch_and_level_and_its_length_scales(
    rate_in: int, rate_out: int, chunk: int
) -> None:
    source = tone(1000, rate_in, 1.0)
    resample = StreamResampler(rate_in, rate_out)
    out = b"".join(resample(source[i : i + chunk]) for i in range(0, len(source), chunk))

    assert len(out) == len(source) * rate_out // rate_in
    freq, level = spectrum_peak(out[len(out) // 4 :], rate_out)
    assert freq == pytest.approx(1000, abs=5)
    assert level == pytest.approx(8000 / np.sqrt(2), rel=0.02)
    assert out == StreamResampler(rate_in, rate_out)(source)  # chunking changes nothing


def test_downsampling_filters_what_8_khz_cannot_carry() -> None:
    out = StreamResampler(24000, 8000)(tone(6000, 24000, 1.0))
    _, level = spectrum_peak(out[400:], 8000)
    assert level < 8000 / np.sqrt(2) / 100  # a 6 kHz tone would alias to 2 kHz: 40 dB down


def test_upsampling_adds_no_image_above_4_khz() -> None:
    out = StreamResampler(8000, 16000)(tone(3000, 8000, 1.0))
    x = np.frombuffer(out, dtype="<i2").astype(np.float64)[800:]
    magnitude = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    freqs = np.fft.rfftfreq(len(x), 1 / 16000)
    image = magnitude[(freqs > 4500)].max()  # the 5 kHz mirror of the 3 kHz tone
    assert image < magnitude.max() / 100


def test_only_integer_ratios() -> None:
    with pytest.raises(ValueError, match="integer ratio"):
        StreamResampler(22050, 8000)
