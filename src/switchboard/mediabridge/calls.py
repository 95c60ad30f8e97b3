"""Outbound calls: one task per ``(callId, attempt)`` that tries the dial's trunks in order, then
carries the answered call between the far end's RTP and the engine until someone ends it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aiortp import PortAllocator

from switchboard.bridge.protocol import (
    BridgeCallState,
    Callback,
    DialRequest,
    EndedFields,
)
from switchboard.mediabridge.config import Limits, Trunk
from switchboard.mediabridge.conversation import Talk, converse
from switchboard.mediabridge.engines.base import Conversation, Engine, TransferCall
from switchboard.mediabridge.media import NoPorts, RtpLeg, negotiate
from switchboard.mediabridge.offeranswer import CallMedia
from switchboard.mediabridge.outcomes import describe, verdict
from switchboard.mediabridge.platform import EventQueue, PlatformClient, event_id
from switchboard.mediabridge.sip.dialog import Dialog
from switchboard.mediabridge.sip.endpoint import SipEndpoint
from switchboard.mediabridge.sip.messages import host_port
from switchboard.mediabridge.sip.uac import Invite, InviteResult

log = logging.getLogger("switchboard.mediabridge")

# the user part of the From URI; the dial's displayName is the caller-ID label
CALLER_USER = "switchboard"


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Call:
    dial: DialRequest
    bridge_call_id: str
    state: BridgeCallState = "ringing"
    ended: EndedFields | None = None
    hangup: asyncio.Event = field(default_factory=asyncio.Event)
    invite: Invite | None = None
    task: asyncio.Task[None] | None = None
    # The attempt's own log, listed in the status answer whether or not the callbacks got
    # through: a platform that lost callbacks recovers them from there.
    events: list[Callback] = field(default_factory=list)


@dataclass
class Media:
    """Where the bridge's RTP lives: the address written in SDP, the address bound."""

    host: str
    bind_host: str
    ports: PortAllocator


class Calls:
    def __init__(
        self,
        *,
        endpoint: SipEndpoint,
        trunks: dict[str, Trunk],
        engine: Engine,
        platform: PlatformClient,
        media: Media,
        instance: str,
        limits: Limits | None = None,
        down: Callable[[str], bool] = lambda _trunk_id: False,
    ) -> None:
        """``down``: whether a trunk's OPTIONS last failed (``sip/ping.py``); a dial tries such
        trunks after the others."""
        self.limits = limits or Limits()
        self.down = down
        self.endpoint = endpoint
        self.trunks = trunks
        self.engine = engine
        self.platform = platform
        self.media = media
        self.instance = instance
        self._calls: dict[tuple[str, int], Call] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, work: Coroutine[object, object, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(_log_failure)
        return task

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def get(self, call_id: str, attempt: int) -> Call | None:
        return self._calls.get((call_id, attempt))

    def dial(self, dial: DialRequest) -> Call:
        """Place the attempt once; a repeated dial gets the first attempt's call."""
        key = (dial.call_id, dial.attempt)
        call = self._calls.get(key)
        if call is None:
            call = Call(dial=dial, bridge_call_id=f"{self.instance}-{secrets.token_hex(6)}")
            self._calls[key] = call
            call.task = self.spawn(self._run(call))
        return call

    def hangup(self, call: Call) -> None:
        if call.state == "ended":
            return
        call.hangup.set()
        if call.invite is not None:
            call.invite.cancel()

    def _event(self, call: Call, kind: str, **fields: object) -> Callback:
        event = Callback.model_validate({
            "event_id": event_id(), "type": kind, "call_id": call.dial.call_id,
            "attempt": call.dial.attempt, "ts": utc_now(), **fields,
        })  # fmt: skip
        call.events.append(event)
        return event

    def _transferred(self, call: Call, trunk: Trunk, to: TransferCall) -> Callback:
        """An outbound call handed on by the far end (REFER): spec 6.2's ``call.transferred``
        with ``transferType`` ``outbound-to-user`` whether the target is a user or a number."""
        target = {"to_user": to.target} if to.kind == "user" else {"to_phone": to.target}
        return self._event(
            call, "transferred", transfer_type="outbound-to-user", trunk_id=trunk.id, **target
        )

    async def _run(self, call: Call) -> None:
        events = EventQueue(self.platform, call.dial.callback_url)
        try:
            call.ended = await self._place(call, events)
        except Exception as exc:
            log.exception("call %s failed", call.dial.call_id)
            call.ended = EndedFields(error_detail=f"the bridge failed ({type(exc).__name__})")
        finally:
            if call.ended is None:  # cancelled by the bridge's own shutdown
                call.ended = EndedFields(error_detail="the bridge shut down during the call")
            call.state = "ended"
            events.emit(self._event(call, "ended", ended=call.ended))
            with contextlib.suppress(asyncio.CancelledError):
                await events.drain()

    async def _place(self, call: Call, events: EventQueue) -> EndedFields:
        dial = call.dial
        failures: list[str] = []
        sip_status = 0
        for trunk_id in self._in_order(dial):
            if call.hangup.is_set():
                return EndedFields(outcome="cancelled", sip_status=sip_status)
            trunk = self.trunks.get(trunk_id)
            if trunk is None:
                failures.append(f"{trunk_id}: unknown trunk")
                continue
            try:
                leg = await RtpLeg.reserve(self.media.host, self.media.bind_host, self.media.ports)
            except NoPorts as exc:
                log.warning("call %s not placed: %s", dial.call_id, exc)
                return EndedFields(error_detail=f"the bridge has no media port free ({exc})")
            media = CallMedia(leg, peer=trunk.host)
            invite = Invite(
                self.endpoint, trunk, phone=dial.phone, caller=CALLER_USER,
                display_name=dial.display_name, offer=media.first_offer(),
            )  # fmt: skip
            call.invite = invite
            try:
                result = await invite.run()
                sip_status = result.status
                if result.dialog is not None:
                    return await self._answered(call, trunk, media, result.dialog, result, events)
            finally:
                invite.close()
                await leg.close()
            log.info("call %s: trunk %s: %s", dial.call_id, trunk_id, describe(result))
            decided = verdict(trunk_id, result)
            if decided.final:
                return EndedFields(
                    outcome=decided.outcome, error_detail=decided.error_detail,
                    sip_status=sip_status,
                )  # fmt: skip
            failures.append(f"{trunk_id}: {describe(result)}")
        if not failures:
            return EndedFields(error_detail="the dial names no trunk")
        return EndedFields(
            error_detail="no trunk carried the call: " + "; ".join(failures), sip_status=sip_status
        )

    def _in_order(self, dial: DialRequest) -> list[str]:
        """The dial's trunks in its order, those known to be down moved to the end."""
        later = [trunk_id for trunk_id in dial.trunk_ids if self.down(trunk_id)]
        if later:
            log.info("call %s: trunk %s down, tried last", dial.call_id, ", ".join(later))
        return [t for t in dial.trunk_ids if t not in later] + later

    async def _answered(
        self, call: Call, trunk: Trunk, media: CallMedia, dialog: Dialog, result: InviteResult,
        events: EventQueue,
    ) -> EndedFields:  # fmt: skip
        dial, leg = call.dial, media.leg
        negotiated = negotiate(result.answer, trunk.host)
        if negotiated is None:
            await dialog.bye()
            dialog.close()
            detail = f"trunk {trunk.id} answered without a G.711 audio stream the bridge can reach"
            return EndedFields(answered=True, sip_status=result.status, error_detail=detail)
        await media.open(negotiated, peers=(trunk.host, dialog.addr[0]))
        dialog.media = media
        call.state = "answered"
        events.emit(self._event(call, "answered", trunk_id=trunk.id, answer_ms=result.answer_ms))
        conversation = Conversation(
            call_id=dial.call_id, direction="outbound", model=dial.model, voice=dial.voice,
            language=dial.language, max_seconds=dial.max_seconds,
            system_prompt=dial.system_prompt, api_key=dial.api_key,
            voicemail_message=dial.voicemail_message,
        )  # fmt: skip
        talk = Talk(
            leg=leg, dialog=dialog, session=self.engine.session(conversation),
            max_seconds=dial.max_seconds, hangup=call.hangup,
            on_started=lambda: events.emit(self._event(call, "ai-started")),
            refer_host=host_port(trunk.host, trunk.port),
            on_transferred=lambda to: events.emit(self._transferred(call, trunk, to)),
            rtp_timeout_sec=self.limits.rtp_timeout_sec,
        )  # fmt: skip
        ended = await converse(talk)
        ended.sip_status = result.status
        return ended


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("call task failed", exc_info=task.exception())
