"""Inbound calls on ``--sip``: the platform says who answers (``inbound_route()``).

* no route (404): the INVITE is refused with 404 and nothing is reported;
* ``ai``: the bridge answers and the engine takes the call with the virtual number's prompt,
  voice, language and maximum duration; ``inbound-*`` callbacks with source ``sip``;
* ``office-tab``: the bridge rings the user's ``sipUri`` as a second leg, and once the user
  answers, answers the caller and relays the media between the two legs; source ``office-tab``.

At most ``--max-inbound-calls`` INVITEs are taken at once, from arrival to the call's end; more,
or an INVITE that finds every RTP port in use, are refused 503 with ``Retry-After`` (decision
0327). An offer the bridge cannot send media to is refused 488 (decision 0326). A platform that
cannot be reached gets the caller 503 with ``Retry-After``, one that refuses the question 500
(decision 0328).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time

from aiosipua import SipRequest, parse_sdp, parse_uri

from switchboard.bridge import protocol
from switchboard.bridge.protocol import (
    Callback,
    EndedFields,
    InboundRouteReply,
    InboundRouteRequest,
)
from switchboard.mediabridge.calls import Calls, utc_now
from switchboard.mediabridge.config import RETRY_AFTER_SEC, Trunk
from switchboard.mediabridge.conversation import Talk, converse, media_lost
from switchboard.mediabridge.engines.base import Conversation
from switchboard.mediabridge.media import Negotiated, NoPorts, RtpLeg, negotiate
from switchboard.mediabridge.offeranswer import CallMedia
from switchboard.mediabridge.platform import EventQueue, PlatformError, event_id
from switchboard.mediabridge.relayhold import follow_each_other
from switchboard.mediabridge.sip import messages
from switchboard.mediabridge.sip.dialog import Dialog
from switchboard.mediabridge.sip.timer import session_timer
from switchboard.mediabridge.sip.uac import Invite
from switchboard.mediabridge.sip.uas import ServerInvite

log = logging.getLogger("switchboard.mediabridge.inbound")

DEFAULT_MAX_SECONDS = 3600
OFFICE_TAB_RING_SEC = 30.0
# a flood at capacity is logged once in this many seconds, not once per INVITE
BUSY_LOG_EVERY_SEC = 10.0


class Inbound:
    def __init__(self, calls: Calls) -> None:
        self.calls = calls
        # the users of the contacts the bridge registers (sip/register.py): a call to one of
        # them is the carrier's call of the number in To (decision 0331)
        self.accounts = {t.username for t in calls.trunks.values() if t.register}
        self.active = 0  # INVITEs taken, from arrival to the call's end
        self._hangups: set[asyncio.Event] = set()
        self._busy_logged = -BUSY_LOG_EVERY_SEC

    async def aclose(self) -> None:
        for event in self._hangups:
            event.set()

    async def answer(self, request: SipRequest, addr: tuple[str, int], transport: str) -> None:
        server = ServerInvite(self.calls.endpoint, request, addr, transport)
        limit = self.calls.limits.max_inbound_calls
        if self.active >= limit:
            self._busy(server, f"{self.active} inbound calls in progress (--max-inbound-calls)")
            return
        self.active += 1
        server.register()
        server.respond(100)
        try:
            await self._answer(server)
        except NoPorts as exc:
            self._busy(server, str(exc))
        finally:
            self.active -= 1
            server.close()

    def _busy(self, server: ServerInvite, why: str) -> None:
        """503 with Retry-After: the caller's side tries another route, or this one later."""
        server.respond(503, extra={"Retry-After": str(RETRY_AFTER_SEC)})
        now = time.monotonic()
        if now - self._busy_logged >= BUSY_LOG_EVERY_SEC:
            self._busy_logged = now
            log.warning("inbound call refused 503: %s", why)

    async def _answer(self, server: ServerInvite) -> None:
        request = server.request
        did = messages.user_of(request.uri)
        if did in self.accounts:  # the request URI is the registered contact
            did = messages.user_of(request.headers.get_first("to"))
        from_number = messages.user_of(request.headers.get_first("from"))
        try:
            offer = parse_sdp(request.body.decode("utf-8", "replace")) if request.body else None
        except (ValueError, IndexError):
            offer = None
        negotiated = negotiate(offer, server.addr[0])
        if negotiated is None:  # refused before the platform is asked anything
            log.info("inbound call to %s refused 488: no G.711 audio the bridge can send to", did)
            server.respond(488)
            return
        timer_status, timer_headers = session_timer(request)
        if timer_status != 200:  # a session interval under RFC 4028's floor: 422
            server.respond(timer_status, extra=timer_headers)
            return
        question = InboundRouteRequest(
            domain=messages.host_of(request.uri), did=did, from_number=from_number
        )
        try:
            route = await self.calls.platform.inbound_route(question)
        except PlatformError as exc:
            self._unrouted(server, did, exc)
            return
        if route is None:
            log.info("inbound call to %s: no route", did)
            server.respond(404)
            return
        if server.cancelled.is_set():
            return  # the caller gave up while the platform was asked (487 has gone)
        media = self.calls.media
        leg = await RtpLeg.reserve(media.host, media.bind_host, media.ports)
        try:
            if route.action == "ai":
                await self._receptionist(server, route, leg, negotiated, did, from_number)
            else:
                await self._office_tab(server, route, leg, negotiated, did, from_number)
        finally:
            await leg.close()

    def _unrouted(self, server: ServerInvite, did: str, exc: PlatformError) -> None:
        """The platform could not say who answers (decision 0328): 503 with ``Retry-After``
        while it is unreachable or failing, a passing state the caller's side may route around;
        500 when it refused the question or answered nonsense, a fault of this deployment that
        waiting does not mend."""
        if exc.passing:
            log.warning("inbound call to %s refused 503: %s", did, exc)
            server.respond(503, extra={"Retry-After": str(RETRY_AFTER_SEC)})
        else:
            log.warning("inbound call to %s refused 500: %s", did, exc)
            server.respond(500)

    def _events(self) -> EventQueue:
        url = self.calls.platform.platform_url + protocol.CALLBACK_PATH
        return EventQueue(self.calls.platform, url)

    async def _receptionist(
        self, server: ServerInvite, route: InboundRouteReply, leg: RtpLeg, negotiated: Negotiated,
        did: str, from_number: str,
    ) -> None:  # fmt: skip
        started = time.monotonic()
        media = CallMedia(leg, peer=server.addr[0])
        await media.open(negotiated, peers=(server.addr[0],))
        if not server.respond(200, media.first_answer()) or server.dialog is None:
            return  # cancelled
        server.dialog.media = media
        if not await server.wait_ack():
            await _hang_up(server.dialog)  # RFC 3261 §13.3.1.4: no ACK, the dialog ends
            return
        call_id = protocol.inbound_call_id()
        fields: dict[str, object] = {
            "tenant": route.tenant, "source": "sip", "number": route.number or did, "did": did,
            "from_number": from_number, "display_name": route.name, "voice": route.voice,
            "language": route.language, "model": route.model, "rule": route.rule,
        }  # fmt: skip
        events = self._events()

        def emit(kind: str, **extra: object) -> None:
            events.emit(Callback.model_validate({
                "event_id": event_id(), "type": kind, "call_id": call_id, "attempt": 1,
                "ts": utc_now(), **fields, **extra,
            }))  # fmt: skip

        emit("inbound-answered", answer_ms=math.ceil((time.monotonic() - started) * 1000))
        max_seconds = route.max_seconds or DEFAULT_MAX_SECONDS
        conversation = Conversation(
            call_id=call_id, direction="inbound", model=route.model, voice=route.voice,
            language=route.language, max_seconds=max_seconds,
            system_prompt=route.system_prompt, api_key=route.api_key,
        )  # fmt: skip
        hangup = asyncio.Event()
        self._hangups.add(hangup)
        try:
            ended = await converse(Talk(
                leg=leg, dialog=server.dialog, session=self.calls.engine.session(conversation),
                max_seconds=max_seconds, hangup=hangup,
                on_started=lambda: emit("inbound-ai-started"),
                rtp_timeout_sec=self.calls.limits.rtp_timeout_sec,
            ))  # fmt: skip
        finally:
            self._hangups.discard(hangup)
        ended.sip_status = 200
        emit("inbound-ended", ended=ended)
        await events.drain()

    async def _office_tab(
        self, server: ServerInvite, route: InboundRouteReply, caller: RtpLeg,
        negotiated: Negotiated, did: str, from_number: str,
    ) -> None:  # fmt: skip
        started = time.monotonic()
        target = _user_trunk(route.sip_uri)
        if target is None:
            log.warning("office-tab user %s has no usable SIP address", route.user)
            server.respond(480)
            return
        trunk, user_part = target
        media = self.calls.media
        user = await RtpLeg.reserve(media.host, media.bind_host, media.ports)
        user_sdp = CallMedia(user, peer=trunk.host)
        invite = Invite(
            self.calls.endpoint, trunk, phone=user_part, caller=from_number,
            display_name=from_number, offer=user_sdp.first_offer(),
        )  # fmt: skip
        server.respond(180)
        ringing = asyncio.ensure_future(invite.run())
        gone = asyncio.ensure_future(server.cancelled.wait())
        try:
            await asyncio.wait({ringing, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not ringing.done():
                invite.cancel()
            result = await ringing
            gone.cancel()
            user_media = negotiate(result.answer, trunk.host)
            if result.dialog is None or user_media is None or server.cancelled.is_set():
                if result.dialog is not None:
                    await _hang_up(result.dialog)
                if not server.cancelled.is_set():
                    server.respond(480)
                return
            await user_sdp.open(user_media, peers=(trunk.host,))
            result.dialog.media = user_sdp
            caller_sdp = CallMedia(caller, peer=server.addr[0])
            await caller_sdp.open(negotiated, peers=(server.addr[0],))
            caller.on_frame = user.send
            user.on_frame = caller.send
            server.respond(200, caller_sdp.first_answer())
            if server.dialog is not None:
                server.dialog.media = caller_sdp
            if not await server.wait_ack() or server.dialog is None:
                await _hang_up(result.dialog)
                if server.dialog is not None:
                    await _hang_up(server.dialog)
                return
            followers = follow_each_other(
                (server.dialog, caller_sdp), (result.dialog, user_sdp)
            )  # fmt: skip
            try:
                await self._relay(server, route, result.dialog, caller, user, started, did,
                                  from_number)  # fmt: skip
            finally:
                for follower in followers:
                    await follower.aclose()
        finally:
            invite.close()
            await user.close()

    async def _relay(
        self, server: ServerInvite, route: InboundRouteReply, user_dialog: Dialog,
        caller: RtpLeg, user: RtpLeg, started: float, did: str, from_number: str,
    ) -> None:  # fmt: skip
        assert server.dialog is not None
        caller_dialog = server.dialog
        call_id = protocol.inbound_call_id()
        fields: dict[str, object] = {
            "tenant": route.tenant, "source": "office-tab", "number": route.number or did,
            "did": did, "from_number": from_number, "display_name": route.user,
            "rule": route.rule or route.user,
        }  # fmt: skip
        events = self._events()

        def emit(kind: str, **extra: object) -> None:
            events.emit(Callback.model_validate({
                "event_id": event_id(), "type": kind, "call_id": call_id, "attempt": 1,
                "ts": utc_now(), **fields, **extra,
            }))  # fmt: skip

        answered_at = time.monotonic()
        emit("inbound-answered", answer_ms=math.ceil((answered_at - started) * 1000))
        timeout = self.calls.limits.rtp_timeout_sec
        caller_bye = asyncio.ensure_future(caller_dialog.far_bye.wait())
        user_bye = asyncio.ensure_future(user_dialog.far_bye.wait())
        quiet = {asyncio.ensure_future(leg.silent(timeout)) for leg in (caller, user)}
        broken = {asyncio.ensure_future(d.broken.wait()) for d in (caller_dialog, user_dialog)}
        done, pending = await asyncio.wait(
            {caller_bye, user_bye, *quiet, *broken}, return_when=asyncio.FIRST_COMPLETED
        )
        for task in pending:
            task.cancel()
        outcome = "far-hangup" if caller_bye in done else "finished" if user_bye in done else ""
        failure = caller_dialog.failure or user_dialog.failure or media_lost(timeout)
        for dialog in (caller_dialog, user_dialog):
            with contextlib.suppress(Exception):
                await dialog.bye()  # a no-op for the side that hung up
            dialog.close()
        await caller.close()
        await user.close()
        ended = EndedFields(
            outcome=outcome, answered=True, talk_sec=round(time.monotonic() - answered_at),
            sip_status=200, rtp_packets_sent=caller.packets_sent,
            rtp_packets_received=caller.packets_received,
            error_detail="" if outcome else failure,
        )  # fmt: skip
        emit("inbound-ended", ended=ended)
        await events.drain()


async def _hang_up(dialog: Dialog) -> None:
    await dialog.bye()
    dialog.close()


def _user_trunk(sip_uri: str) -> tuple[Trunk, str] | None:
    """The user's phone as a one-off trunk (UDP unless the URI says ``transport=tcp``)."""
    try:
        uri = parse_uri(sip_uri)
    except ValueError:
        return None
    if uri.scheme != "sip" or not uri.host:
        return None
    tcp = (uri.params.get("transport") or "").lower() == "tcp"
    host = uri.host.strip("[]")
    trunk = Trunk(
        id="office-tab", uri=sip_uri, host=host, port=uri.port or 5060,
        transport="tcp" if tcp else "udp",
        from_domain=host, ring_timeout_sec=OFFICE_TAB_RING_SEC,
    )  # fmt: skip
    return trunk, uri.user or ""
