"""The offline engine: a real conversation without a key or a network.

It speaks the AI's lines with espeak-ng (the system prompt's first sentence, then a short
script), listens for the caller's turns with a voice-activity detector, and ends after the script
or when the caller stays silent. It understands no words, so the transcript says only what it
knows: the AI's lines as spoken and ``[caller spoke 1.8 s]`` for each caller turn. Tokens are 0.

Time is the number of frames the bridge has fed (20 ms each), never the wall clock, so a test
feeds frames as fast as it likes. The conversation is half duplex: while the engine speaks, and
for ``ECHO_GUARD_FRAMES`` after, what comes back is taken for the echo of its own voice.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from switchboard.mediabridge.engines.base import (
    FRAME_BYTES,
    FRAME_MS,
    Conversation,
    EndCall,
    EngineError,
    FinishReason,
    Record,
    Signal,
    TurnRecord,
)
from switchboard.mediabridge.engines.speech import TurnDetector, espeak_voice, synthesize

OPENING_MAX_CHARS = 240
ECHO_GUARD_FRAMES = 15
DEFAULT_SILENCE_TIMEOUT_SEC = 8.0
SYNTHESIS_CACHE_SIZE = 256


@dataclass(frozen=True, slots=True)
class Script:
    """What the engine says besides the opening: one prompt per caller turn it waits for, the
    goodbye, and the closing line of a call that reached its maximum duration."""

    prompts: tuple[str, ...]
    goodbye: str
    closing: str


SCRIPTS = {
    "en": Script(
        prompts=(
            "This is the offline voice of switchboard. Please say something after this sentence.",
            "Thank you, I heard you. Please say one more thing.",
        ),
        goodbye="Thank you for talking to me. Goodbye.",
        closing="I am sorry, our time is up. Goodbye.",
    ),
    "de": Script(
        prompts=(
            "Hier spricht die Offline-Stimme von switchboard. Bitte sagen Sie nach diesem Satz "
            "etwas.",
            "Danke, ich habe Sie gehört. Bitte sagen Sie noch etwas.",
        ),
        goodbye="Danke für das Gespräch. Auf Wiederhören.",
        closing="Es tut mir leid, unsere Zeit ist um. Auf Wiederhören.",
    ),
    "fr": Script(
        prompts=(
            "Ici la voix hors ligne de switchboard. Dites quelque chose après cette phrase, "
            "s'il vous plaît.",
            "Merci, je vous ai entendu. Dites encore une chose, s'il vous plaît.",
        ),
        goodbye="Merci pour cet échange. Au revoir.",
        closing="Je suis désolé, le temps est écoulé. Au revoir.",
    ),
    "es": Script(
        prompts=(
            "Habla la voz sin conexión de switchboard. Por favor, diga algo después de esta frase.",
            "Gracias, le he oído. Por favor, diga una cosa más.",
        ),
        goodbye="Gracias por hablar conmigo. Adiós.",
        closing="Lo siento, se acabó el tiempo. Adiós.",
    ),
}

_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def opening_line(system_prompt: str) -> str:
    """The system prompt's first sentence (its first line at most, cut at a word boundary)."""
    lines = system_prompt.strip().splitlines()
    first = _SENTENCE_END.split(lines[0].strip() if lines else "", maxsplit=1)[0].strip()
    if len(first) > OPENING_MAX_CHARS:
        first = first[:OPENING_MAX_CHARS].rsplit(" ", 1)[0]
    return first


def script_for(language: str) -> Script:
    return SCRIPTS.get(language.strip().lower()[:2], SCRIPTS["en"])


def _utc_now() -> datetime:
    return datetime.now(UTC)


class OfflineEngine:
    """The factory; one per bridge process. Synthesised lines are cached per voice and text."""

    name = "offline"

    def __init__(
        self,
        *,
        espeak: str = "espeak-ng",
        silence_timeout_sec: float = DEFAULT_SILENCE_TIMEOUT_SEC,
        now: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.espeak = espeak
        self.silence_timeout_frames = round(silence_timeout_sec * 1000 / FRAME_MS)
        self.now = now
        self._cache: dict[tuple[str, str], list[bytes]] = {}

    async def speech(self, text: str, voice: str) -> list[bytes]:
        """``text`` as 20 ms frames in ``voice`` (an espeak-ng voice)."""
        key = (voice, text)
        frames = self._cache.get(key)
        if frames is None:
            frames = await synthesize(text, voice, executable=self.espeak)
            if len(self._cache) >= SYNTHESIS_CACHE_SIZE:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = frames
        return frames

    def session(self, conversation: Conversation) -> OfflineSession:
        return OfflineSession(self, conversation)


class OfflineSession:
    """One call's conversation, driven by ``feed`` (the clock) and ``next_frame``."""

    def __init__(self, engine: OfflineEngine, conversation: Conversation) -> None:
        self._engine = engine
        self._conversation = conversation
        self._voice = espeak_voice(conversation.language, conversation.voice)
        self._script = script_for(conversation.language)
        self._lines: dict[str, list[bytes]] = {}
        self._detector = TurnDetector()
        self._out: deque[bytes] = deque()
        self._played = 0  # frames taken by next_frame
        self._queued: list[tuple[int, TurnRecord]] = []  # AI lines by their first frame
        self._pending: list[str] = []  # lines still to say, in order
        self._speaking_until = 0  # the fed-frame count until which the caller is not heard
        self._quiet_since = 0
        self._ending: EndCall | None = None  # set once the last line is queued
        self._signal: Signal | None = None
        self._signalled = asyncio.Event()
        self._finished: Record | None = None
        self._started_at = _utc_now()
        self.record = Record()

    @property
    def espeak_voice(self) -> str:
        return self._voice

    @property
    def frames_fed(self) -> int:
        return self._detector.frame

    def _ts(self, frame: int) -> datetime:
        return self._started_at + timedelta(milliseconds=frame * FRAME_MS)

    async def start(self) -> None:
        """Synthesise every line of the script now, so no frame ever waits for espeak-ng."""
        opening = opening_line(self._conversation.system_prompt)
        script = self._script
        texts = [t for t in (opening, *script.prompts, script.goodbye, script.closing) if t]
        try:
            spoken = await asyncio.gather(*(self._engine.speech(t, self._voice) for t in texts))
        except EngineError as exc:
            self.record.error_detail = str(exc)
            raise
        self._lines = dict(zip(texts, spoken, strict=True))
        self._started_at = self._engine.now()
        if opening:
            self._say(opening)
        self._say(script.prompts[0])
        self._pending = list(script.prompts[1:])

    def _say(self, text: str) -> None:
        """Queue a line; its turn is stamped with the time its first frame goes out."""
        begins = self._played + len(self._out)
        turn = TurnRecord("AI", text, self._ts(self.frames_fed + len(self._out)))
        self._out.extend(self._lines[text])
        self._queued.append((begins, turn))
        self.record.turns.append(turn)
        self.record.output_turns += 1
        self._detector.reset()
        self._speaking_until = self.frames_fed + len(self._out) + ECHO_GUARD_FRAMES
        self._quiet_since = self._speaking_until

    def _caller_turn(self, start_frame: int, seconds: float) -> None:
        text = f"[caller spoke {seconds:.1f} s]"
        self.record.turns.append(TurnRecord("Caller", text, self._ts(start_frame)))
        self.record.input_turns += 1

    def _next_line(self) -> None:
        if self._pending:
            self._say(self._pending.pop(0))
        else:
            self._say(self._script.goodbye)
            self._ending = EndCall("finished")

    def feed(self, frame: bytes) -> None:
        if len(frame) != FRAME_BYTES:
            raise ValueError(f"a frame is {FRAME_BYTES} bytes, not {len(frame)}")
        if self._finished is not None or self._ending is not None:
            self._detector.skip(frame)
            return
        if self.frames_fed < self._speaking_until:
            self._detector.skip(frame)
            return
        turn = self._detector.push(frame)
        if turn is not None:
            self._caller_turn(turn.start_frame, turn.seconds)
            self._next_line()
        elif self._detector.in_turn:
            self._quiet_since = self.frames_fed
        elif self.frames_fed - self._quiet_since >= self._engine.silence_timeout_frames:
            self._say(self._script.goodbye)
            self._ending = EndCall("finished")

    def _silence(self) -> None:
        """Drop what is still queued; lines not begun were never said, so leave the record."""
        self._out.clear()
        for begins, turn in self._queued:
            if begins >= self._played:
                self.record.turns.remove(turn)
                self.record.output_turns -= 1
        self._queued.clear()

    def next_frame(self) -> bytes | None:
        if self._out:
            self._played += 1
            return self._out.popleft()
        if self._ending is not None and self._signal is None and self._finished is None:
            self._signal = self._ending
            self._signalled.set()
        return None

    async def signal(self) -> Signal:
        await self._signalled.wait()
        assert self._signal is not None
        return self._signal

    def transfer_failed(self, detail: str) -> None:
        """Never asks for a transfer: nothing to take back."""

    async def finish(self, reason: FinishReason) -> Record:
        if self._finished is not None:
            return self._finished
        turn = self._detector.close()
        if turn is not None:
            self._caller_turn(turn.start_frame, turn.seconds)
        outcome: str = reason
        if self.record.error_detail:
            outcome = ""
        elif reason == "engine":
            outcome = self._ending.outcome if self._ending is not None else "finished"
        if reason != "engine":
            self._silence()
        if reason == "max-duration":
            self._say(self._script.closing)
        self.record.outcome = outcome
        self._finished = self.record
        return self.record
