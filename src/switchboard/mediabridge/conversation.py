"""An answered call's conversation: the far end's RTP into the engine, the engine's audio out
every 20 ms, until the engine ends it, the far end hangs up (BYE), the platform hangs up, the
talk time reaches ``maxSeconds`` (the engine's closing line is played first), the engine's
transfer succeeds (a blind transfer: REFER to the far end, docs/bridge-engines.md), the far
end's media stops for ``--rtp-timeout-sec`` (a technical failure, decision 0326), or the far end
breaks the dialog off (it never acknowledged the answer to its re-INVITE). While the far end
holds the call, the conversation waits: the engine is neither fed nor asked for audio, and
nothing is sent (decision 0328)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC

from switchboard.bridge.protocol import EndedFields, Turn
from switchboard.mediabridge.engines.base import (
    CLOSING_LINE_MAX_SEC,
    EndCall,
    EngineError,
    EngineSession,
    FinishReason,
    Record,
    Signal,
    TransferCall,
    TurnRecord,
)
from switchboard.mediabridge.media import RtpLeg, pace
from switchboard.mediabridge.sip.dialog import Dialog, Transfer

log = logging.getLogger("switchboard.mediabridge")

# how long the far end may take to report the transferred call's final status (NOTIFY)
TRANSFER_WAIT_SEC = 30.0
# the glossary's one transfer outcome (decision 0323)
TRANSFERRED = "transferred-to-vnum"
# an AI peer in a meeting room has no SIP dialog to transfer (decision 0323)
TRANSFER_DETAIL = "the engine asked for a transfer, which a room call cannot carry"
OUTCOME_OF_REASON = {
    "far-hangup": "far-hangup",
    "max-duration": "max-duration",
    "cancelled": "cancelled",
    "transferred": TRANSFERRED,
}


@dataclass
class Talk:
    leg: RtpLeg
    dialog: Dialog
    session: EngineSession
    max_seconds: int
    hangup: asyncio.Event
    on_started: Callable[[], None]
    # where a transfer target is sent: ``sip:<target>@<refer_host>`` (the trunk's address)
    refer_host: str = ""
    on_transferred: Callable[[TransferCall], None] = lambda _: None
    transfer_wait_sec: float = TRANSFER_WAIT_SEC
    rtp_timeout_sec: float = 0.0  # 0: a silent far end keeps the call


def media_lost(seconds: float) -> str:
    return f"the far end sent no media for {seconds:g} s"


def turns_of(records: list[TurnRecord]) -> list[Turn]:
    return [
        Turn(
            speaker=record.speaker,
            text=record.text,
            ts=record.ts.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        )
        for record in records
    ]


async def _first(*waits: asyncio.Future[object]) -> asyncio.Future[object]:
    done, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    return next(iter(done))


def decision(signal: asyncio.Future[Signal]) -> tuple[str, str]:
    """What the engine's own end of the call means: ``(outcome, failure)``, one of them empty."""
    try:
        decided = signal.result()
    except EngineError as exc:
        return "", str(exc)
    if isinstance(decided, EndCall):
        return decided.outcome, ""
    return "", TRANSFER_DETAIL


async def converse(talk: Talk) -> EndedFields:
    leg, dialog, session = talk.leg, talk.dialog, talk.session
    answered_at = time.monotonic()
    try:
        await session.start()
    except EngineError as exc:
        await dialog.bye()
        dialog.close()
        await leg.close()
        return _ended(talk, answered_at, "", Record(error_detail=str(exc)))
    talk.on_started()
    closing_until: float | None = None
    playing = True

    def tick() -> bool:
        """One 20 ms step: the caller's frame in (until the session finished), the AI's out."""
        if not playing:
            return False
        if not leg.sending:  # on hold: the conversation waits, and no closing line is heard
            return closing_until is None
        if closing_until is None:
            session.feed(leg.take())
        frame = session.next_frame()
        if closing_until is not None and (frame is None or time.monotonic() >= closing_until):
            return False
        leg.send(frame)
        return True

    pacer = asyncio.ensure_future(pace(tick))
    deadline = answered_at + max(1, talk.max_seconds)
    reason: FinishReason = "engine"
    outcome = ""
    failure = ""  # why the engine's side failed, when it did
    while True:
        signal = asyncio.ensure_future(session.signal())
        far = asyncio.ensure_future(dialog.far_bye.wait())
        hangup = asyncio.ensure_future(talk.hangup.wait())
        limit = asyncio.ensure_future(asyncio.sleep(max(0.0, deadline - time.monotonic())))
        silent = asyncio.ensure_future(leg.silent(talk.rtp_timeout_sec))
        broken = asyncio.ensure_future(dialog.broken.wait())
        done = await _first(signal, far, hangup, limit, silent, broken)  # type: ignore[arg-type]
        if done is far:
            reason = "far-hangup"
        elif done is broken:
            reason, failure = "far-hangup", dialog.failure
        elif done is silent:
            log.info("call %s: %s", dialog.call_id, media_lost(talk.rtp_timeout_sec))
            reason, failure = "far-hangup", media_lost(talk.rtp_timeout_sec)
        elif done is hangup:
            reason = "cancelled"
        elif done is limit:
            reason = "max-duration"
        else:
            try:
                decided = signal.result()
            except EngineError as exc:
                failure = str(exc)
                break
            if isinstance(decided, EndCall):
                outcome = decided.outcome
                break
            transfer = (
                await dialog.refer(
                    f"sip:{decided.target}@{talk.refer_host}", talk.transfer_wait_sec
                )
                if talk.refer_host
                else Transfer(0, 0, "this call has no route for transfers")
            )
            if transfer.ok:
                log.info("call %s transferred to a %s", dialog.call_id, decided.kind)
                talk.on_transferred(decided)
                reason = "transferred"
            elif dialog.far_bye.is_set():
                reason = "far-hangup"
            else:  # the caller is still there: the engine tells them and the call goes on
                log.info("call %s: transfer failed: %s", dialog.call_id, transfer.failure)
                session.transfer_failed(transfer.failure)
                continue
        break
    try:
        record = await session.finish(reason)
    except EngineError as exc:
        record = Record(error_detail=str(exc))
    # the closing line (max-duration), or what the engine said before it ended the call (a
    # goodbye, a voicemail message) is played out before the BYE
    if reason in ("max-duration", "engine") and not failure and not dialog.far_bye.is_set():
        closing_until = time.monotonic() + CLOSING_LINE_MAX_SEC
        closing_done = asyncio.ensure_future(dialog.far_bye.wait())
        await _first(pacer, closing_done)  # type: ignore[arg-type]
    playing = False
    pacer.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await pacer
    if not dialog.far_bye.is_set():
        await dialog.bye()
    dialog.close()
    await leg.close()
    if failure:
        outcome, record.error_detail = "", failure
    elif not outcome:
        outcome = OUTCOME_OF_REASON.get(reason, record.outcome)
        if reason == "engine" and record.error_detail:
            outcome = ""
    return _ended(talk, answered_at, outcome, record)


def _ended(talk: Talk, answered_at: float, outcome: str, record: Record) -> EndedFields:
    return EndedFields(
        outcome=outcome,
        answered=True,
        talk_sec=round(time.monotonic() - answered_at),
        error_detail=record.error_detail if not outcome else "",
        input_turns=record.input_turns,
        output_turns=record.output_turns,
        tokens_prompt=record.tokens_prompt,
        tokens_total=record.tokens_total,
        turns=turns_of(record.turns),
        rtp_packets_sent=talk.leg.packets_sent,
        rtp_packets_received=talk.leg.packets_received,
    )
