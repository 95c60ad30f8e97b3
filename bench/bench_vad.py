"""Caller-turn detection on real espeak-ng speech in noise: the measurement behind the offline
engine's voice-activity detector (docs/decisions/0320-offline-engine-vad.md).

A caller says three utterances with pauses (1 s, 1.5 s, 2 s) on a line carrying white or brown
(low-frequency, like hum and traffic) noise at a given speech-to-noise ratio. Each detector
labels the 20 ms frames; the same turn rule (start: 3 of 5 frames voiced; end: 700 ms unvoiced;
shorter than 300 ms: dropped) makes turns of them. Printed per condition: the turns found, in
seconds, against the truth, and the share of pause frames labelled speech.

Candidates: WebRTC's VAD at aggressiveness 0 to 3, and an energy detector with an adaptive
noise floor (onset 9 dB, release 5 dB above it). A few seconds.

Checked before any figure is printed: the line is whole 20 ms frames, the truth marks speech only
inside the utterances and makes one turn of each; on the line without noise every detector finds
those turns, at least 90% of their frames and no frame of the pauses; each noisy line has the
speech-to-noise ratio it is labelled with, and each detector labels every frame of it.

    .venv/bin/python bench/bench_vad.py
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import numpy as np
import webrtcvad

from report import check
from switchboard.mediabridge.engines.speech import TurnDetector, synthesize

UTTERANCES = (
    "Hello, I would like to book a table for two people tomorrow evening.",
    "Yes, that works for me. Thank you very much.",
    "Could you also tell me where to park?",
)
PAUSES_SEC = (1.0, 1.5, 2.0, 1.0)
CONDITIONS = [(snr, kind) for snr in (30, 20, 15, 10, 5) for kind in ("white", "brown")]
Detector = Callable[[np.ndarray], np.ndarray]
FRAME = 160  # samples in 20 ms at 8 kHz
TURN_TOLERANCE_SEC = 0.3  # a detector's turn on the noise-free line against the truth's


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


async def caller_line() -> tuple[np.ndarray, np.ndarray, list[range]]:
    """The clean line as (frames, truth, utterances): truth marks frames within 35 dB of the
    peak, utterances are the frames each utterance takes (the rest are the pauses)."""
    spoken = await asyncio.gather(*(synthesize(u, "en-gb+m1") for u in UTTERANCES))
    pieces = [np.zeros(int(8000 * PAUSES_SEC[0]), np.float64)]
    utterances: list[range] = []
    at = len(pieces[0]) // FRAME
    for frames, pause in zip(spoken, PAUSES_SEC[1:], strict=True):
        pieces.append(np.frombuffer(b"".join(frames), "<i2").astype(np.float64))
        pieces.append(np.zeros(int(8000 * pause), np.float64))
        utterances.append(range(at, at + len(frames)))
        at += len(frames) + len(pieces[-1]) // FRAME
    line = np.concatenate(pieces)
    check(len(line) == at * FRAME, f"the line is {len(line)} samples, not {at} 20 ms frames")
    line = line.reshape(-1, FRAME)
    level = 10 * np.log10((line**2).mean(axis=1) + 1e-3)
    return line, level > level.max() - 35, utterances


def check_line(
    line: np.ndarray, truth: np.ndarray, utterances: list[range], detectors: dict[str, Detector]
) -> None:
    """The truth is one turn per utterance, and every detector hears it on the noise-free line."""
    check(len(line) == len(truth), f"{len(line)} frames, {len(truth)} labelled in the truth")
    spoken = np.zeros(len(line), bool)
    for frames in utterances:
        spoken[frames.start : frames.stop] = True
    check(not (truth & ~spoken).any(), "the truth marks speech in a pause")
    expected = turns(truth)
    check(len(expected) == len(UTTERANCES), f"truth turns {expected}, not one per utterance")
    for turn, frames in zip(expected, utterances, strict=True):
        seconds = len(frames) * 0.02
        check(
            seconds / 2 <= turn <= seconds,
            f"a truth turn of {turn} s for an utterance of {seconds:.2f} s",
        )
    for name, detect in detectors.items():
        voiced = detect(line)
        check(
            voiced.shape == truth.shape, f"{name} labelled {voiced.shape} frames, not {truth.shape}"
        )
        found = turns(voiced)
        check(
            len(found) == len(expected)
            and all(abs(a - b) <= TURN_TOLERANCE_SEC for a, b in zip(found, expected, strict=True)),
            f"{name} without noise: turns {found}, truth {expected}",
        )
        heard = (voiced & truth).sum() / truth.sum()
        check(heard >= 0.9, f"{name} without noise labels only {heard:.0%} of speech as speech")
        check(not (voiced & ~spoken).any(), f"{name} without noise labels a pause as speech")


def noise(rng: np.random.Generator, kind: str, shape: tuple[int, int], power: float) -> np.ndarray:
    n = rng.standard_normal(shape[0] * shape[1])
    if kind == "brown":
        n = np.cumsum(n)
        n -= np.convolve(n, np.ones(400) / 400, "same")
    n *= np.sqrt(power / (n**2).mean())
    return n.reshape(shape)


def main() -> None:
    line, truth, utterances = asyncio.run(caller_line())
    speech_power = (line[truth] ** 2).mean()
    detectors: dict[str, Detector] = {f"webrtc{m}": webrtc(m) for m in range(4)}
    detectors["energy"] = energy
    check_line(line, truth, utterances, detectors)
    rng = np.random.default_rng(1)
    print(f"truth: {turns(truth)}")
    for snr, kind in CONDITIONS:
        added = noise(rng, kind, line.shape, speech_power / 10 ** (snr / 10))
        actual = 10 * np.log10(speech_power / (added**2).mean())
        check(abs(actual - snr) < 0.01, f"{kind} noise at {actual:.2f} dB SNR, not {snr} dB")
        noisy = line + added
        print(f"-- {snr} dB {kind} noise")
        for name, detect in detectors.items():
            voiced = detect(noisy)
            check(
                voiced.shape == truth.shape and voiced.dtype == np.bool_,
                f"{name} at {snr} dB {kind}: labels {voiced.shape} {voiced.dtype}",
            )
            false_rate = (voiced & ~truth).sum() / (~truth).sum()
            print(f"   {name:8} turns {turns(voiced)!s:34} pause frames as speech {false_rate:.2f}")


if __name__ == "__main__":
    main()
