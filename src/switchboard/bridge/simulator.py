"""The simulated media bridge: a carrier plus an AI agent, speaking bridge protocol v1 over HTTP.

It serves ``/v1/health``, ``/v1/calls`` (dial), ``/v1/calls/{callId}/hangup`` and
``/v1/calls/{callId}/status``, and posts signed callbacks to the ``callbackUrl`` of each dial.
The room paths are ``simulated_rooms``'; ``ai-peer`` starts a real WebRTC peer
(``simulated_aipeer``) that plays the scripted inbound call in the room.
Dials are idempotent per ``(callId, attempt)``: a repeated dial is answered without placing a
second call. Calls live in memory: a restarted simulator knows none of them (``unknown``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import httpx
import orjson
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from switchboard.bridge import protocol
from switchboard.bridge.protocol import (
    AiPeerRequest,
    BridgeCallState,
    Callback,
    CallRef,
    DialReply,
    DialRequest,
    EndedFields,
    RoomCallback,
    StatusReply,
    Turn,
)
from switchboard.bridge.scenarios import Script, Step, inbound_script, outbound_script
from switchboard.bridge.simulated_aipeer import SimulatedAiPeer
from switchboard.bridge.simulated_rooms import SimulatedRooms
from switchboard.bridge.simulated_sfu import SimulatedSfu
from switchboard.kit.clock import Clock, iso_utc
from switchboard.webrtc.mesh import SIGNALING_ERRORS

log = logging.getLogger("switchboard.bridge.sim")

# Real-time delays between callback retries: the platform answers 404 until the dialling
# request has committed, and 5xx while it is restarting.
CALLBACK_RETRY_DELAYS = (0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 4.0, 8.0)


@dataclass
class SimCall:
    dial: DialRequest
    started: dt.datetime
    state: BridgeCallState = "ringing"
    turns: list[Turn] = field(default_factory=list)
    answered_at: float | None = None
    # A browser's call to a virtual number has no SIP answer: it is connected once the AI peer
    # is (``ai-started``), and its talk time runs from the start, as the bridge's AI peer counts.
    connected: bool = False
    # A browser's call: ``ai-started`` waits here until the AI peer's connection is up (False:
    # the browser left or never connected); the wait moves the rest of the script by ``shift``.
    connect: Callable[[], Awaitable[bool]] | None = None
    shift: float = 0.0
    position: float = 0.0
    ended: EndedFields | None = None
    task: asyncio.Task[None] | None = None
    hangup_requested: bool = False
    hangup_outcome: str = "cancelled"
    log: list[Callback] = field(default_factory=list)
    undelivered: list[Callback] = field(default_factory=list)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("simulated call failed", exc_info=task.exception())


def _json(data: object, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type="application/json")


class SimulatedBridge:
    """One simulator instance; ``app`` is its ASGI application."""

    def __init__(
        self,
        *,
        secret: str,
        speed: float,
        clock: Clock,
        callback_client: httpx.AsyncClient | None = None,
        platform_url: str = "",
    ) -> None:
        """``callback_client``: how callbacks reach the platform; by default plain HTTP to each
        dial's ``callbackUrl``, created on first use. ``platform_url``: where the SFU's room
        events go (``<platform_url>/bridge.ashx/v1/room-events``; empty: the callback client's
        base URL)."""
        self.secret = secret
        self.speed = speed
        self.clock = clock
        self.instance = "sim-" + secrets.token_hex(4)
        self._http = callback_client
        self._calls: dict[tuple[str, int], SimCall] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.dials = 0
        self.room_events_url = platform_url.rstrip("/") + protocol.ROOM_EVENTS_PATH
        self.sfu = SimulatedSfu(report=self._post_room_event, new_id=lambda: secrets.token_hex(8))
        self.rooms = SimulatedRooms(secret, self.sfu, ai_peer=self.start_ai_peer)
        self.app = Starlette(
            routes=[
                Route("/v1/health", self._health, methods=["GET"]),
                Route("/v1/calls", self._dial, methods=["POST"]),
                Route("/v1/calls/{call_id}/hangup", self._hangup, methods=["POST"]),
                Route("/v1/calls/{call_id}/status", self._status, methods=["POST"]),
                *self.rooms.routes(),
            ]
        )

    # HTTP side -------------------------------------------------------------------------

    async def _health(self, _request: Request) -> Response:
        return _json({
            "ok": True, "protocol": protocol.PROTOCOL_VERSION, "bridge": self.instance,
            "registrations": {}, "trunks": {},  # the simulator dials no trunk
        })  # fmt: skip

    async def _signed_body(self, request: Request) -> bytes | Response:
        body = await request.body()
        if not protocol.verify(self.secret, body, request.headers.get(protocol.SIGNATURE_HEADER)):
            return _json({"error": "bad_signature"}, 401)
        return body

    async def _dial(self, request: Request) -> Response:
        body = await self._signed_body(request)
        if isinstance(body, Response):
            return body
        try:
            dial = DialRequest.model_validate_json(body)
        except ValidationError:
            return _json({"error": "invalid_request"}, 400)
        key = (dial.call_id, dial.attempt)
        call = self._calls.get(key)
        if call is None:
            self.dials += 1
            call = SimCall(dial=dial, started=self.clock.now())
            self._calls[key] = call
            call.task = self._spawn(self._play_outbound(call))
        reply = DialReply(
            accepted=True,
            call_id=dial.call_id,
            attempt=dial.attempt,
            bridge_call_id=f"{self.instance}-{dial.call_id}-{dial.attempt}",
        )
        return _json(reply.model_dump(mode="json"))

    async def _ref(self, request: Request) -> CallRef | Response:
        body = await self._signed_body(request)
        if isinstance(body, Response):
            return body
        try:
            return CallRef.model_validate_json(body)
        except ValidationError:
            return _json({"error": "invalid_request"}, 400)

    async def _hangup(self, request: Request) -> Response:
        ref = await self._ref(request)
        if isinstance(ref, Response):
            return ref
        call = self._calls.get((ref.call_id, ref.attempt))
        if call is None:
            return _json({"ok": True, "state": "unknown"})
        if call.state != "ended" and call.task is not None:
            call.hangup_requested = True
            call.task.cancel()
        return _json({"ok": True, "state": call.state})

    async def _status(self, request: Request) -> Response:
        ref = await self._ref(request)
        if isinstance(ref, Response):
            return ref
        call = self._calls.get((ref.call_id, ref.attempt))
        reply = StatusReply(
            call_id=ref.call_id,
            attempt=ref.attempt,
            state=call.state if call else "unknown",
            ended=call.ended if call else None,
            events=list(call.log) if call else [],
        )
        return _json(reply.model_dump(mode="json"))

    # Playing a script ------------------------------------------------------------------

    def _spawn(self, work: Awaitable[None]) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(_log_failure)
        return task

    @property
    def busy(self) -> bool:
        return bool(self._tasks)

    async def wait_idle(self) -> None:
        """Wait until every simulated call has ended and delivered its callbacks."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _post_room_event(self, event: RoomCallback) -> None:
        body = orjson.dumps(event.model_dump(mode="json"))
        headers = {
            protocol.SIGNATURE_HEADER: protocol.sign(self.secret, body),
            "Content-Type": "application/json",
        }
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=httpx.Timeout(10.0, connect=3.0))
        try:
            response = await self._http.post(self.room_events_url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            log.warning("room event %s not reported: %s", event.type, exc)
            return
        if response.status_code >= 300:
            log.warning("room event %s refused: %s", event.type, response.status_code)

    async def aclose(self) -> None:
        await self.sfu.aclose()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._http is not None:
            await self._http.aclose()

    def _ts(self, call: SimCall, at: float) -> str:
        return iso_utc(call.started + dt.timedelta(seconds=at)) or ""

    async def _wait_until(self, call: SimCall, at: float) -> None:
        delay = max(0.0, at - call.position) / self.speed
        if delay:
            began = asyncio.get_running_loop().time()
            try:
                await asyncio.sleep(delay)
            except asyncio.CancelledError:  # hung up: the call lasted until now
                waited = (asyncio.get_running_loop().time() - began) * self.speed
                call.position = min(at, call.position + waited)
                raise
        call.position = max(call.position, at)

    async def _post(self, url: str, event: Callback) -> str:
        """``"ok"``; ``"unknown"`` when the platform kept answering 404 (it never committed the
        call: an orphan) or refused the event; ``"unreachable"`` when it could not be reached
        (down, restarting): the call goes on and the platform recovers the events by status."""
        body = orjson.dumps(event.model_dump(mode="json"))
        headers = {
            protocol.SIGNATURE_HEADER: protocol.sign(self.secret, body),
            "Content-Type": "application/json",
        }
        verdict = "unreachable"
        for delay in (*CALLBACK_RETRY_DELAYS, None):
            try:
                if self._http is None:
                    self._http = httpx.AsyncClient(timeout=httpx.Timeout(10.0, connect=3.0))
                response = await self._http.post(url, content=body, headers=headers)
            except httpx.HTTPError as exc:
                log.info("callback %s for %s failed: %s", event.type, event.call_id, exc)
                verdict = "unreachable"
            else:
                if response.status_code < 300:
                    return "ok"
                verdict = "unknown" if response.status_code == 404 else "unreachable"
                if response.status_code not in (404, 409, 429) and response.status_code < 500:
                    log.warning(
                        "callback %s for %s refused: %s", event.type, event.call_id,
                        response.status_code,
                    )  # fmt: skip
                    return "unknown"
            if delay is None:
                break
            await asyncio.sleep(delay)
        log.warning("giving up on callback %s for %s (%s)", event.type, event.call_id, verdict)
        return verdict

    async def _send(self, call: SimCall, url: str, event: Callback) -> str:
        """Log ``event`` and post it after any earlier event of the call whose callback did
        not get through: the platform sees a call's events in order, or asks for them."""
        call.log.append(event)
        call.undelivered.append(event)
        while call.undelivered:
            verdict = await self._post(url, call.undelivered[0])
            if verdict != "ok":
                return verdict
            call.undelivered.pop(0)
        return "ok"

    def _event(self, call: SimCall, kind: str, at: float, **fields: object) -> Callback:
        data = {
            "event_id": secrets.token_hex(8),
            "type": kind,
            "call_id": call.dial.call_id,
            "attempt": call.dial.attempt,
            "ts": self._ts(call, at),
            **fields,
        }
        return Callback.model_validate(data)

    def _ended_fields(self, call: SimCall, step: Step | None, at: float) -> EndedFields:
        if step is not None:
            outcome, error_detail = step.outcome, step.error_detail
        else:
            outcome, error_detail = call.hangup_outcome, ""
        ai = sum(1 for t in call.turns if t.speaker == "AI")
        prompt_tokens = max(1, len(call.dial.system_prompt) // 4)
        spoken = sum(len(t.text) // 4 + 1 for t in call.turns)
        since = call.answered_at if call.answered_at is not None else 0.0
        answered = call.answered_at is not None or call.connected
        talk = round(at - since) if answered else 0
        return EndedFields(
            outcome=outcome,
            answered=answered,
            talk_sec=max(0, talk),
            error_detail=error_detail,
            input_turns=len(call.turns) - ai,
            output_turns=ai,
            tokens_prompt=prompt_tokens if answered else 0,
            tokens_total=prompt_tokens + spoken if answered else 0,
            turns=list(call.turns),
        )

    async def _play_outbound(self, call: SimCall) -> None:
        dial = call.dial
        script = outbound_script(
            number=dial.phone,
            trunk_ids=dial.trunk_ids,
            prompt=dial.system_prompt,
            display_name=dial.display_name,
            max_seconds=dial.max_seconds,
        )
        await self._play(call, script, dial.callback_url, inbound={})

    async def _play(
        self, call: SimCall, script: Script, url: str, *, inbound: dict[str, object]
    ) -> None:
        prefix = "inbound-" if inbound else ""
        final: Step | None = None
        try:
            for step in script.steps:
                at = step.at + call.shift
                await self._wait_until(call, at)
                if step.kind == "turn":
                    call.turns.append(
                        Turn(speaker=step.speaker, text=step.text, ts=self._ts(call, at))
                    )
                    continue
                if step.kind == "ended":
                    final = step
                    break
                if step.kind == "ai-started" and call.connect is not None:
                    began = asyncio.get_running_loop().time()
                    if not await call.connect():
                        final = Step(at=step.at, kind="ended", outcome="empty-room")
                        break
                    call.shift += (asyncio.get_running_loop().time() - began) * self.speed
                    at = call.position = step.at + call.shift
                extra: dict[str, object] = dict(inbound)
                if step.kind == "ai-started" and call.answered_at is None:
                    call.connected = True
                if step.kind == "answered":
                    call.state = "answered"
                    call.answered_at = at
                    extra.update(trunk_id=step.trunk_id, answer_ms=round(at * 1000))
                elif step.kind == "transferred":
                    extra.update(
                        to_user="reception",
                        transfer_type="outbound-to-user" if not inbound else "vnum-to-officetab",
                        trunk_id=step.trunk_id,
                    )
                event = self._event(call, prefix + step.kind, at, **extra)
                if await self._send(call, url, event) == "unknown":
                    # The platform does not know the call (its dial never committed): end it.
                    call.ended = EndedFields(
                        answered=call.answered_at is not None,
                        error_detail="the platform does not know this call",
                        turns=list(call.turns),
                    )
                    call.state = "ended"
                    return
        except asyncio.CancelledError:
            if not call.hangup_requested:
                raise
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()  # the hangup is handled: later waits run normally
        at = final.at + call.shift if final is not None else call.position
        call.ended = self._ended_fields(call, final, at)
        call.state = "ended"
        event = self._event(call, prefix + "ended", at, ended=call.ended, **inbound)
        await self._send(call, url, event)

    # Inbound calls, produced on demand ---------------------------------------------------

    async def inbound_call(
        self,
        *,
        callback_url: str,
        tenant: str,
        sip: bool,
        number: str,
        from_number: str,
        display_name: str,
        prompt: str,
        outcome: str = "finished",
        voice: str = "Aoede",
        language: str = "en-US",
        model: str = "",
        source: str | None = None,
        rule: str = "",
    ) -> str:
        """Play one inbound call to the end; returns its call id."""
        call_id = protocol.inbound_call_id()
        dial = DialRequest(
            call_id=call_id, attempt=1, tenant=tenant, phone=from_number,
            display_name=display_name, trunk_ids=[], voice=voice, language=language,
            model=model, max_seconds=3500, system_prompt=prompt, api_key="",
            callback_url=callback_url,
        )  # fmt: skip
        call = SimCall(dial=dial, started=self.clock.now())
        inbound = self._inbound_fields(
            dial, source=source or ("sip" if sip else "vnum"), number=number,
            did=number if sip else "",
            room="" if sip else f"vnum-{number}-{secrets.token_hex(3)}", rule=rule,
        )  # fmt: skip
        script = inbound_script(prompt=prompt, display_name=display_name, sip=sip, outcome=outcome)
        await self._play(call, script, callback_url, inbound=inbound)
        return call_id

    @staticmethod
    def _inbound_fields(
        dial: DialRequest, *, source: str, number: str, did: str, room: str, rule: str
    ) -> dict[str, object]:
        """What every callback of an inbound call carries."""
        return {
            "tenant": dial.tenant, "source": source, "number": number, "did": did,
            "from_number": dial.phone, "room": room, "display_name": dial.display_name,
            "voice": dial.voice, "language": dial.language, "model": dial.model, "rule": rule,
        }  # fmt: skip

    # A browser's call to a virtual number: the AI peer in a room ---------------------------

    def start_ai_peer(self, request: AiPeerRequest) -> None:
        """Start the AI peer of ``request``'s call: it joins the room, and the scripted inbound
        conversation plays once the browser's connection is up (``POST /v1/rooms/ai-peer``)."""
        dial = DialRequest(
            call_id=request.call_id, attempt=1, tenant=request.tenant, phone="",
            display_name=request.name, trunk_ids=[], voice=request.voice,
            language=request.language, model=request.model,
            max_seconds=request.max_seconds or 3500, system_prompt=request.system_prompt,
            api_key=request.api_key, callback_url=request.callback_url,
        )  # fmt: skip
        call = SimCall(dial=dial, started=self.clock.now())
        self._calls[(dial.call_id, dial.attempt)] = call
        inbound = self._inbound_fields(
            dial, source="vnum", number=request.number, did="", room=request.room, rule=""
        )
        script = inbound_script(
            prompt=request.system_prompt, display_name=request.name, sip=False,
            outcome="finished", max_seconds=request.max_seconds,
        )  # fmt: skip
        call.task = self._spawn(self._answer_in_room(call, script, inbound, request))

    async def _answer_in_room(
        self, call: SimCall, script: Script, inbound: dict[str, object], request: AiPeerRequest
    ) -> None:
        peer = SimulatedAiPeer(request)
        url = call.dial.callback_url
        try:
            async with peer.mesh:
                call.connect = peer.connect
                watch = asyncio.ensure_future(self._hang_up_when_gone(call, peer.mesh.gone))
                try:
                    await self._play(call, script, url, inbound=inbound)
                finally:
                    watch.cancel()
        except SIGNALING_ERRORS as exc:
            log.warning("AI peer of %s: signaling failed: %s", call.dial.call_id, exc)
            if call.state != "ended":
                detail = f"the room's signaling failed ({exc})"
                at = call.position - call.shift
                failed = Script([Step(at=at, kind="ended", error_detail=detail)])
                await self._play(call, failed, url, inbound=inbound)
        finally:
            peer.track.stop()

    @staticmethod
    async def _hang_up_when_gone(call: SimCall, gone: asyncio.Event) -> None:
        """The browser left the room: the call ends ``far-hangup`` (``empty-room`` when it
        never connected)."""
        await gone.wait()
        if call.state != "ended" and call.task is not None:
            call.hangup_requested = True
            call.hangup_outcome = "far-hangup" if call.connected else "empty-room"
            call.task.cancel()
