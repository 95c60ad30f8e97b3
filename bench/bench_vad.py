"""Caller-turn detection on real espeak-ng speech in noise: the measurement behind the offline
engine's voice-activity detector (docs/decisions/0320-offline-engine-vad.md).

A caller says three utterances with pauses (1 s, 1.5 s, 2 s) on a line carrying white or brown
(low-frequency, like hum and traffic) noise at a given speech-to-noise ratio. Each detector
labels the 20 ms frames; the same turn rule (start: 3 of 5 frames voiced; end: 700 ms unvoiced;
shorter than 300 ms: dropped) makes turns of them. Printed per condition: the turns found, in
seconds, against the truth, and the share of pause frames labelled speech.

Candidates: WebRTC's VAD at aggressiveness 0 to 3, and an energy detector with an adaptive
noise floor (onset 9 dB, release 5 dB above it). A few seconds.

    .venv/bin/python bench/bench_vad.py
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import numpy as np
import webrtcvad

from switchboard.mediabridge.engines.speech import TurnDetector, synthesize

UTTERANCES = (
    "Hello, I would like to book a table for two people tomorrow evening.",
    "Yes, that works for me. Thank you very much.",
    "Could you also tell me where to park?",
)
PAUSES_SEC = (1.0, 1.5, 2.0, 1.0)
CONDITIONS = [(snr, kind) for snr in (30, 20, 15, 10, 5) for kind in ("white", "brown")]
Detector = Callable[[np.ndarray], np.ndarray]


def webrtc(mode: int) -> Detector:
    def detect(frames: np.ndarray) -> np.ndarray:
        vad = webrtcvad.Vad(mode)
        pcm = np.clip(frames, -32768, 32767).astype("<i2")
        return np.array([vad.is_speech(f.tobytes(), 8000) for f in pcm])

    return detect


def energy(frames: np.ndarray, on_db: float = 9.0, off_db: float = 5.0) -> np.ndarray:
    level = 10 * np.log10((frames.astype(np.float64) ** 2).mean(axis=1) + 1e-3)
    floor, active, out = level[0], False, []
    for e in level:
        active = e > floor + (off_db if active else on_db)
        if not active:
            floor = min(e, floor + 0.05) if e > floor else 0.1 * e + 0.9 * floor
        out.append(active)
    return np.array(out)


def turns(voiced: np.ndarray) -> list[float]:
    t = TurnDetector
    found, start, last = [], -1, 0
    for i in range(len(voiced)):
        if start < 0:
            if voiced[max(0, i - t.START_WINDOW + 1) : i + 1].sum() >= t.START_VOICED:
                start, last = max(0, i - t.START_WINDOW + 1), i
        elif voiced[i]:
            last = i
        elif i - last >= t.END_SILENCE_FRAMES:
            found.append((start, last))
            start = -1
    if start >= 0:
        found.append((start, last))
    return [round((b - a + 1) * 0.02, 2) for a, b in found if b - a + 1 >= t.MIN_TURN_FRAMES]


async def caller_line() -> tuple[np.ndarray, np.ndarray]:
    """The clean line as (frames, truth): truth marks frames within 35 dB of the peak."""
    spoken = await asyncio.gather(*(synthesize(u, "en-gb+m1") for u in UTTERANCES))
    pieces = [np.zeros(int(8000 * PAUSES_SEC[0]), np.float64)]
    for frames, pause in zip(spoken, PAUSES_SEC[1:], strict=True):
        pieces.append(np.frombuffer(b"".join(frames), "<i2").astype(np.float64))
        pieces.append(np.zeros(int(8000 * pause), np.float64))
    line = np.concatenate(pieces)
    line = line[: len(line) // 160 * 160].reshape(-1, 160)
    level = 10 * np.log10((line**2).mean(axis=1) + 1e-3)
    return line, level > level.max() - 35


def noise(rng: np.random.Generator, kind: str, shape: tuple[int, int], power: float) -> np.ndarray:
    n = rng.standard_normal(shape[0] * shape[1])
    if kind == "brown":
        n = np.cumsum(n)
        n -= np.convolve(n, np.ones(400) / 400, "same")
    n *= np.sqrt(power / (n**2).mean())
    return n.reshape(shape)


def main() -> None:
    line, truth = asyncio.run(caller_line())
    speech_power = (line[truth] ** 2).mean()
    detectors: dict[str, Detector] = {f"webrtc{m}": webrtc(m) for m in range(4)}
    detectors["energy"] = energy
    rng = np.random.default_rng(1)
    print(f"truth: {turns(truth)}")
    for snr, kind in CONDITIONS:
        noisy = line + noise(rng, kind, line.shape, speech_power / 10 ** (snr / 10))
        print(f"-- {snr} dB {kind} noise")
        for name, detect in detectors.items():
            voiced = detect(noisy)
            false_rate = (voiced & ~truth).sum() / (~truth).sum()
            print(f"   {name:8} turns {turns(voiced)!s:34} pause frames as speech {false_rate:.2f}")


if __name__ == "__main__":
    main()
