"""The engine interface: what runs a call's conversation.

The bridge owns the SIP dialog and the RTP media; an engine owns the conversation. Audio crosses
this interface as 16-bit signed little-endian mono PCM at 8 kHz, in 20 ms frames of 320 bytes:
the rate of the G.711 legs. An engine that speaks another rate (Gemini Live takes 16 kHz and
answers 24 kHz) resamples inside itself, with state per call and per direction.

The life of a session, driven by the bridge's media loop:

1. ``await start()`` once the far end answered (raises ``EngineError`` when the engine cannot
   be reached or refuses the key; its message is one line and never contains the key).
2. Every 20 ms: ``feed(frame)`` with the caller's audio and ``next_frame()`` for the AI's audio
   (``None`` means silence). Neither blocks.
3. ``await signal()`` resolves when the engine itself wants the call to end (``EndCall``) or to
   be handed to someone else (``TransferCall``). It raises ``EngineError`` when the engine fails
   mid-call (its connection is lost and cannot be resumed): the bridge then finishes the session
   and reports a technical failure, whose ``errorDetail`` is in the record.
   After a ``TransferCall`` the bridge tries the transfer; when it fails and the caller is still
   there it calls ``transfer_failed(detail)`` (the engine tells the caller; ``signal()`` may
   resolve again) and the call goes on.
4. ``await finish(reason)`` ends the conversation, whoever ended it, and returns the record.
   With ``max-duration`` the engine may queue a closing line first; the bridge plays what
   ``next_frame()`` still returns, up to ``CLOSING_LINE_MAX_SEC``, before it hangs up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

SAMPLE_RATE = 8000
FRAME_MS = 20
FRAME_SAMPLES = SAMPLE_RATE * FRAME_MS // 1000
FRAME_BYTES = FRAME_SAMPLES * 2
CLOSING_LINE_MAX_SEC = 8.0

Speaker = Literal["AI", "Caller"]
FinishReason = Literal["engine", "far-hangup", "max-duration", "cancelled", "transferred"]


class EngineError(Exception):
    """The engine failed (bad key, unknown model, quota, lost connection): the attempt is a
    technical failure whose ``errorDetail`` is ``str(exc)``."""


@dataclass(frozen=True)
class Conversation:
    """What an engine is told about the call."""

    call_id: str
    direction: Literal["outbound", "inbound"]
    model: str
    voice: str
    language: str
    max_seconds: int
    system_prompt: str = field(repr=False)
    api_key: str = field(repr=False)
    # what to say to a voicemail greeting before ending the call (empty: hang up silently)
    voicemail_message: str = ""


@dataclass(frozen=True)
class TurnRecord:
    speaker: Speaker
    text: str
    ts: datetime


@dataclass(frozen=True)
class EndCall:
    """The engine ended the conversation: ``finished``, ``not-now`` or ``voicemail``."""

    outcome: Literal["finished", "not-now", "voicemail"]


@dataclass(frozen=True)
class TransferCall:
    """The engine asks to hand the caller to a user (``kind`` ``user``) or a phone number."""

    target: str
    kind: Literal["user", "phone"]


Signal = EndCall | TransferCall


@dataclass
class Record:
    """What the conversation produced; ``outcome`` empty means a technical failure."""

    outcome: str = ""
    error_detail: str = ""
    turns: list[TurnRecord] = field(default_factory=list)
    input_turns: int = 0
    output_turns: int = 0
    tokens_prompt: int = 0
    tokens_total: int = 0


class EngineSession(Protocol):
    async def start(self) -> None: ...

    def feed(self, frame: bytes) -> None: ...

    def next_frame(self) -> bytes | None: ...

    async def signal(self) -> Signal: ...

    def transfer_failed(self, detail: str) -> None: ...

    async def finish(self, reason: FinishReason) -> Record: ...


class Engine(Protocol):
    """A factory of sessions: one engine per bridge process, one session per call."""

    name: str

    def session(self, conversation: Conversation) -> EngineSession: ...
