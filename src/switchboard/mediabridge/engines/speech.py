"""Speech pieces the engines share: espeak-ng synthesis, resampling to the bridge's frames and
the caller-turn detector.

Audio at the engine interface is PCM16 little-endian mono at 8 kHz in 20 ms frames
(``base.FRAME_BYTES``). Resampling uses soxr (libsoxr's high-quality filter), one shot for a
whole utterance here; ``soxr.ResampleStream`` keeps state where audio arrives in pieces.
"""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass

import numpy as np
import soxr
import webrtcvad

from switchboard.mediabridge.engines.base import FRAME_BYTES, FRAME_MS, SAMPLE_RATE, EngineError

ESPEAK_TIMEOUT_SEC = 20.0
# espeak-ng voices by the language part of a locale tag; an unknown language speaks English.
ESPEAK_LANGUAGES = {
    "en-us": "en-us", "en-gb": "en-gb", "en": "en-us", "de": "de", "fr": "fr", "es": "es",
    "it": "it", "nl": "nl", "pt-br": "pt-br", "pt": "pt", "pl": "pl", "sv": "sv", "da": "da",
    "nb": "nb", "fi": "fi", "cs": "cs", "tr": "tr", "ru": "ru", "ja": "ja", "zh": "cmn",
}  # fmt: skip
# The Gemini voices' character, as the nearest espeak-ng variant (female or male).
FEMALE_VOICES = frozenset(
    {"Aoede", "Autonoe", "Erinome", "Kore", "Laomedeia", "Sadachbia", "Schedar", "Zephyr"}
)


def espeak_voice(language: str, voice: str) -> str:
    """The espeak-ng ``-v`` argument for a locale tag and a Gemini voice name."""
    tag = language.strip().lower().replace("_", "-")
    base = ESPEAK_LANGUAGES.get(tag) or ESPEAK_LANGUAGES.get(tag.split("-")[0], "en-us")
    return f"{base}+{'f3' if voice in FEMALE_VOICES else 'm3'}"


def wav_pcm16(data: bytes) -> tuple[np.ndarray, int]:
    """Samples (int16) and rate of a PCM16 mono WAV. espeak-ng writes the size fields of a
    stream it cannot seek back into as placeholders, so the ``data`` chunk runs to the end."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise EngineError("espeak-ng wrote no WAV audio")
    pos, rate = 12, 0
    while pos + 8 <= len(data):
        tag, size = data[pos : pos + 4], struct.unpack_from("<I", data, pos + 4)[0]
        body = pos + 8
        if tag == b"fmt ":
            fmt, channels, rate, _, _, bits = struct.unpack_from("<HHIIHH", data, body)
            if fmt != 1 or channels != 1 or bits != 16:
                raise EngineError("espeak-ng audio is not 16-bit mono PCM")
        elif tag == b"data":
            if not rate:
                raise EngineError("espeak-ng audio has no format chunk")
            end = min(len(data), body + size) & ~1
            return np.frombuffer(data[body:end], dtype="<i2"), rate
        pos = body + size + (size & 1)
    raise EngineError("espeak-ng audio has no data chunk")


def to_frames(samples: np.ndarray, rate: int) -> list[bytes]:
    """Resample to 8 kHz and cut into 20 ms frames, the last one padded with silence."""
    pcm = samples.astype(np.float32) / 32768.0
    if rate != SAMPLE_RATE:
        pcm = soxr.resample(pcm, rate, SAMPLE_RATE, quality="HQ")
    raw = (np.clip(pcm, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()
    raw += b"\0" * (-len(raw) % FRAME_BYTES)
    return [raw[i : i + FRAME_BYTES] for i in range(0, len(raw), FRAME_BYTES)]


async def synthesize(text: str, voice: str, *, executable: str = "espeak-ng") -> list[bytes]:
    """Speak ``text`` with espeak-ng; the bridge's 20 ms frames. The text goes through standard
    input, never the command line (where other users of the host could read it)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            executable, "-v", voice, "--stdin", "--stdout",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
    except OSError as exc:
        raise EngineError(f"cannot run {executable}: {exc.strerror or exc}") from None
    try:
        out, err = await asyncio.wait_for(proc.communicate(text.encode()), ESPEAK_TIMEOUT_SEC)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise EngineError(f"{executable} took longer than {ESPEAK_TIMEOUT_SEC:g} s") from None
    if proc.returncode != 0:
        first = err.decode(errors="replace").strip().splitlines()[:1]
        raise EngineError(f"{executable} failed ({proc.returncode}): {' '.join(first)}")
    samples, rate = wav_pcm16(out)
    return to_frames(samples, rate)


@dataclass(frozen=True, slots=True)
class CallerTurn:
    """A stretch of the caller's speech, in frames since the session started."""

    start_frame: int
    speech_frames: int

    @property
    def seconds(self) -> float:
        return self.speech_frames * FRAME_MS / 1000


class TurnDetector:
    """Caller turns from 20 ms frames: WebRTC's VAD (aggressiveness 3) per frame, a turn starts
    when ``START_VOICED`` of the last ``START_WINDOW`` frames are speech and ends after
    ``END_SILENCE_FRAMES`` frames without; turns shorter than ``MIN_TURN_FRAMES`` are noise.
    docs/decisions/0320-offline-engine-vad.md has the measurement behind these figures."""

    AGGRESSIVENESS = 3
    START_WINDOW = 5
    START_VOICED = 3
    END_SILENCE_FRAMES = 35
    MIN_TURN_FRAMES = 15
    # A line too noisy for the VAD (about 5 dB) sounds like endless speech: cut it into turns.
    MAX_TURN_FRAMES = 1500

    def __init__(self) -> None:
        self._vad = webrtcvad.Vad(self.AGGRESSIVENESS)
        self._recent: list[bool] = []
        self._start: int | None = None
        self._last_voiced = 0
        self.frame = 0

    @property
    def in_turn(self) -> bool:
        return self._start is not None

    def reset(self) -> None:
        """Forget what was heard (while the engine speaks, the caller's line carries its echo)."""
        self._recent.clear()
        self._start = None

    def skip(self, frame: bytes) -> None:
        """Let one frame pass unheard. The VAD still takes it: it adapts to the line's noise
        over its first frames, and flags noise as speech until it has."""
        self.frame += 1
        self._vad.is_speech(frame, SAMPLE_RATE)

    def push(self, frame: bytes) -> CallerTurn | None:
        """Take one frame; the caller's turn when this frame ended one."""
        index = self.frame
        self.frame += 1
        voiced = self._vad.is_speech(frame, SAMPLE_RATE)
        if self._start is None:
            self._recent = [*self._recent[-(self.START_WINDOW - 1) :], voiced]
            if sum(self._recent) >= self.START_VOICED:
                self._start = index - len(self._recent) + 1
                self._last_voiced = index
            return None
        if voiced:
            self._last_voiced = index
        if index - self._start + 1 >= self.MAX_TURN_FRAMES:
            return self.close()
        if index - self._last_voiced < self.END_SILENCE_FRAMES:
            return None
        return self.close()

    def close(self) -> CallerTurn | None:
        """End the turn in progress now (the call ended); None when there is none, or noise."""
        start, self._start = self._start, None
        self._recent.clear()
        if start is None:
            return None
        frames = self._last_voiced - start + 1
        return CallerTurn(start, frames) if frames >= self.MIN_TURN_FRAMES else None
