"""A confirmed dialog (RFC 3261 §12): BYE in both directions, whichever side ends the call; the
far end's re-INVITEs and UPDATEs, which refresh the session, hold and resume it or move its
media (decision 0328); and the blind transfer (REFER, RFC 3515) with the NOTIFYs that report how
it went."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from dataclasses import dataclass, field
from typing import Protocol

from aiosipua import SipRequest, SipResponse

from switchboard.mediabridge.sip import checks, messages
from switchboard.mediabridge.sip.endpoint import SipEndpoint
from switchboard.mediabridge.sip.refresher import SessionTimer
from switchboard.mediabridge.sip.timer import session_timer
from switchboard.mediabridge.sip.transaction import ClientTransaction, resend_2xx, send_request

log = logging.getLogger("switchboard.mediabridge.sip")


class SessionMedia(Protocol):
    """The call's media as the far end's offers change it (``offeranswer.CallMedia``)."""

    def answer(self, offer: bytes) -> bytes | None:
        """The bridge's answer to a new offer, applied; ``None``: refused, nothing changed."""

    def offer(self) -> bytes:
        """The bridge's offer, for a re-INVITE that carries none."""

    def answered(self, answer: bytes) -> bool:
        """Apply the far end's answer to that offer; False when it cannot be used."""

    def again(self) -> bytes:
        """The bridge's last SDP once more: the offer of a session refresh."""


@dataclass
class _Unacked:
    """The 2xx of a re-INVITE, resent until its ACK (RFC 3261 §13.3.1.4)."""

    cseq: int
    response: SipResponse
    offered: bool  # it carries the bridge's offer, and the ACK the far end's answer
    task: asyncio.Task[None]


@dataclass(frozen=True)
class Transfer:
    """How a REFER went: the REFER's own status, the transferred call's final status (from the
    NOTIFY's sipfrag, 0: none), and why it failed (empty: it succeeded)."""

    refer_status: int
    final_status: int
    failure: str = ""

    @property
    def ok(self) -> bool:
        return not self.failure


def _sipfrag_status(body: bytes) -> int:
    """``SIP/2.0 200 OK`` -> 200 (0 when the body is not a status line)."""
    parts = body.decode("utf-8", "replace").split(None, 2)
    if len(parts) >= 2 and parts[0].upper().startswith("SIP/") and parts[1].isdigit():
        return int(parts[1])
    return 0


@dataclass
class Dialog:
    endpoint: SipEndpoint
    call_id: str
    local: str  # our From (UAC) or To (UAS) value with its tag
    remote: str  # the peer's, with its tag
    remote_target: str
    addr: tuple[str, int]
    transport: str
    cseq: int = 1
    remote_cseq: int = 0  # the far end's last CSeq (0: none yet, RFC 3261 §12.2.2)
    # the proxies that record-routed the dialog, nearest first (``messages.route_set``); with
    # one, ``addr`` is the first proxy's, and a target refresh changes the remote target only
    route: tuple[str, ...] = ()
    # where the message that made the dialog came from: the next hop when ``addr`` names a host
    # that does not resolve
    source: tuple[str, int] | None = None
    far_bye: asyncio.Event = field(default_factory=asyncio.Event)
    ended: bool = False
    media: SessionMedia | None = None  # set once the call's media is up
    # set when the far end broke the dialog off without a BYE; ``failure`` says how
    broken: asyncio.Event = field(default_factory=asyncio.Event)
    failure: str = ""
    # the status lines of the ``Event: refer`` NOTIFYs' sipfrag bodies, as they arrive
    notified: asyncio.Queue[int] = field(default_factory=asyncio.Queue)
    # the session timer (RFC 4028): refreshes when the far end made the bridge the refresher,
    # ends the call when the far end stops refreshing (``refresher.py``, decision 0334)
    timer: SessionTimer = field(init=False)
    _unacked: _Unacked | None = None
    _offering: bool = False  # the bridge's own re-INVITE awaits its answer (``reinvite``)
    _offers: asyncio.Lock = field(default_factory=asyncio.Lock)  # one re-INVITE of ours at once
    _last_invite: tuple[int, SipResponse] | None = None

    def __post_init__(self) -> None:
        self.timer = SessionTimer(self)

    def register(self) -> None:
        self.endpoint.add_dialog(self.call_id, self)

    def on_request(self, request: SipRequest, addr: tuple[str, int], transport: str) -> None:
        method = request.method
        if not self._ours(request):
            if method != "ACK":  # the Call-ID of this dialog with other tags (RFC 3261 §12.2.2)
                self._reply(request, addr, transport, 481)
            return
        if method == "ACK":
            self._ack(request)
            return
        cseq = messages.cseq_of(request)[0]
        if method == "INVITE" and self._answered_again(cseq, addr, transport):
            return
        if method != "CANCEL":  # a CANCEL carries the CSeq of the request it cancels
            if cseq < self.remote_cseq:
                self._reply(request, addr, transport, 500, reason="CSeq Out of Order")
                return
            self.remote_cseq = cseq
        if method == "INVITE":
            self._reinvite(request, addr, transport)
            return
        status, body = 200, b""
        extra: dict[str, str] = {}
        if method == "BYE":
            self.ended = True
            self.timer.close()
            self.far_bye.set()
        elif method == "UPDATE":
            status, extra, body, _ = self._offer_answer(request)
            if status < 300:
                self._retarget(request)
                self._took(extra)
        elif method == "NOTIFY":
            event = (request.headers.get_first("event") or "").split(";")[0].strip().lower()
            if event == "refer":
                self.notified.put_nowait(_sipfrag_status(request.body or b""))
        elif method == "OPTIONS":
            extra = checks.CAPABILITIES
        elif method not in ("INFO", "CANCEL"):
            refusal = checks.method_refusal(method)  # REFER from the far end, unknown methods
            status, extra = refusal.status, refusal.headers
        self._reply(request, addr, transport, status, extra, body)

    def _reply(
        self, request: SipRequest, addr: tuple[str, int], transport: str, status: int,
        extra: dict[str, str] | None = None, body: bytes = b"", reason: str = "",
    ) -> SipResponse:  # fmt: skip
        target = status < 300 and request.method in ("INVITE", "UPDATE")  # RFC 3311 §5.2
        response = messages.response(
            request, status, contact=self.endpoint.contact() if target else "", body=body,
            extra=extra, reason=reason,
        )  # fmt: skip
        self.endpoint.send(response, addr, transport)
        return response

    def _answered_again(self, cseq: int, addr: tuple[str, int], transport: str) -> bool:
        """A retransmitted re-INVITE gets the answer it got before."""
        pending, last = self._unacked, self._last_invite
        answer = pending.response if pending is not None and pending.cseq == cseq else None
        if answer is None and last is not None and last[0] == cseq:
            answer = last[1]
        if answer is not None:
            self.endpoint.send(answer, addr, transport)
        return answer is not None

    def _reinvite(self, request: SipRequest, addr: tuple[str, int], transport: str) -> None:
        status, extra, body, offered = self._offer_answer(request)
        if status < 300:
            extra = {**checks.CAPABILITIES, **extra}
        response = self._reply(request, addr, transport, status, extra, body)
        cseq = messages.cseq_of(request)[0]
        self._last_invite = (cseq, response)
        if status < 300:
            self._retarget(request)
            self._took(extra)
            task = asyncio.ensure_future(self._await_ack(response, addr, transport))
            self._unacked = _Unacked(cseq, response, offered, task)

    def _took(self, answered: dict[str, str]) -> None:
        """The far end's re-INVITE or UPDATE is answered 2xx: a session refresh, with the
        refresher the answer names; the end of the timer when it names no interval."""
        self.timer.took(answered.get("Session-Expires", ""))

    def _retarget(self, request: SipRequest) -> None:
        """A re-INVITE or an UPDATE the bridge took names where the far end's requests now go
        (its Contact: a target refresh, RFC 3261 §12.2.2, RFC 3311 §5.2)."""
        target, addr = messages.contact_target(request)
        if target:
            self.remote_target = target
        if addr is not None and self.transport == "udp" and not self.route:
            self.addr = addr  # over TCP one connection carries the whole dialog

    def _offer_answer(self, request: SipRequest) -> tuple[int, dict[str, str], bytes, bool]:
        """How a re-INVITE or an UPDATE is answered: its status, headers and body, and whether
        the body is the bridge's offer (a re-INVITE without one, RFC 3261 §14.2)."""
        pending, body = self._unacked, request.body or b""
        if pending is not None and (request.method == "INVITE" or (body and pending.offered)):
            return 491, {}, b"", False  # RFC 3261 §14.2, RFC 3311 §5.2
        if self._offering and (request.method == "INVITE" or body):
            return 491, {}, b"", False  # the two offers crossed (glare, RFC 3261 §14.2)
        status, timer = session_timer(request)
        if status != 200:
            return status, timer, b"", False
        if not body and request.method == "UPDATE":
            return 200, timer, b"", False  # a session refresh
        if body and "application/sdp" not in (request.content_type or "").lower():
            return 415, {"Accept": "application/sdp"}, b"", False
        if self.media is None:
            return 491, {}, b"", False  # the media is still being set up: the far end retries
        if not body:
            return 200, timer, self.media.offer(), True
        answer = self.media.answer(body)
        if answer is None:
            agent = messages.host_port(*self.endpoint.local)
            return 488, {"Warning": f'305 {agent} "Incompatible media format"'}, b"", False
        return 200, timer, answer, False

    def _ack(self, request: SipRequest) -> None:
        pending = self._unacked
        if pending is None or messages.cseq_of(request)[0] != pending.cseq:
            return  # the first INVITE's ACK again, or the ACK of a refusal
        self._unacked = None
        pending.task.cancel()
        if pending.offered and not (
            request.body and self.media is not None and self.media.answered(request.body)
        ):
            self._break("the far end's ACK carried no answer the bridge can use")

    async def _await_ack(
        self, response: SipResponse, addr: tuple[str, int], transport: str
    ) -> None:
        await resend_2xx(self.endpoint, response, addr, transport)
        self._unacked = None
        self._break("the far end never acknowledged the answer to its re-INVITE")

    def _break(self, failure: str) -> None:
        """The dialog is over by the far end's fault: whoever carries the call sends the BYE
        (RFC 3261 §13.3.1.4) and reports ``failure``."""
        log.info("call %s: %s", self.call_id, failure)
        self.failure = failure
        self.broken.set()

    def _ours(self, request: SipRequest) -> bool:
        """The far end's requests carry its tag in From and this side's in To."""
        theirs = messages.tag_of(request.headers.get_first("from"))
        ours = messages.tag_of(request.headers.get_first("to"))
        return theirs == messages.tag_of(self.remote) and ours == messages.tag_of(self.local)

    async def next_hop(self) -> tuple[str, int]:
        """The address this side's requests go to: ``addr``, its host looked up when it is a
        name (and kept), or ``source`` when it does not resolve."""
        if self.transport == "tcp":
            return self.addr  # the dialog's connection
        resolved = await self.endpoint.resolve(self.addr)
        self.addr = resolved or self.source or self.addr
        return self.addr

    def _request(self, method: str, contact: str = "", body: bytes = b"") -> SipRequest:
        """This side's next request in the dialog: to the remote target, through the route set
        (RFC 3261 §12.2.1.1)."""
        self.cseq += 1
        uri, route = messages.routed(self.remote_target, self.route)
        return messages.request(
            method, uri,
            via_value=messages.via(self.transport, self.endpoint.local, messages.new_branch()),
            from_value=self.local, to_value=self.remote, call_id=self.call_id, cseq=self.cseq,
            contact=contact, route=route, body=body,
        )  # fmt: skip

    async def reinvite(self, offer: bytes) -> bytes | None:
        """Send ``offer`` in a re-INVITE (RFC 3261 §14.1) and return the far end's answer, once
        acknowledged; None when it was refused or not answered."""
        response = await self.offer(offer)
        if response is None or response.status_code >= 300:
            return None
        return response.body or None

    async def refresh(self) -> SipResponse | None:
        """A session refresh (RFC 4028 §7.4): the bridge's last SDP again in a re-INVITE, its
        answer applied; the final response (None: none came, or the call is over)."""
        if self.media is None or self.ended:
            return None
        response = await self.offer(self.media.again())
        if response is not None and response.status_code < 300 and response.body:
            self.media.answered(response.body)
        return response

    def expire(self, failure: str) -> None:
        """The session timer ended the session: whoever carries the call sends the BYE."""
        if not self.ended:
            self._break(failure)

    async def offer(self, offer: bytes) -> SipResponse | None:
        """Send ``offer`` in a re-INVITE with the session timer's headers, one of the bridge's
        at a time, and return the final response (None: none came, or the call is over). A
        491 (the far end's own offer crossed it) is retried once, after 2.1 to 4 s when this
        side made the dialog's Call-ID, else within 2 s. A 2xx sets the session timer anew."""
        response: SipResponse | None = None
        for retry in (False, True):
            if retry:
                owner = self.call_id.endswith("@" + self.endpoint.advertise)
                await asyncio.sleep((210 + secrets.randbelow(191)) / 100 if owner
                                    else secrets.randbelow(201) / 100)  # fmt: skip
            async with self._offers:
                if self.ended:
                    return None
                self._offering = True
                try:
                    response = await self._offer_once(offer)
                finally:
                    self._offering = False
            if response is not None and response.status_code < 300:
                self.timer.answered(response)
            if response is None or response.status_code != 491:
                return response
        return response

    async def _offer_once(self, offer: bytes) -> SipResponse | None:
        request = self._request("INVITE", contact=self.endpoint.contact(), body=offer)
        request.headers.set_single("Allow", checks.ALLOW)
        for name, value in self.timer.headers().items():
            request.headers.set_single(name, value)
        cseq = self.cseq
        txn = ClientTransaction(self.endpoint, request, await self.next_hop(), self.transport)
        txn.start()
        response: SipResponse | None = None
        with contextlib.suppress(TimeoutError):  # a far end that rings a re-INVITE forever
            async with asyncio.timeout(64 * self.endpoint.t1):
                response = await txn.next()
                while response is not None and response.status_code < 200:
                    response = await txn.next()
        if response is None or response.status_code >= 300:
            # a refusal's ACK belongs to its transaction (RFC 3261 §17.1.1.3)
            if response is not None:
                txn.send_ack(self._ack_of(request, response, cseq, same_branch=True))
            asyncio.get_running_loop().call_later(64 * self.endpoint.t1, txn.close)
            return response
        txn.send_ack(self._ack_of(request, response, cseq, same_branch=False), self.addr)
        # kept a while, so that a 2xx sent again (the ACK lost) is acknowledged again
        asyncio.get_running_loop().call_later(64 * self.endpoint.t1, txn.close)
        return response

    def _ack_of(
        self, request: SipRequest, response: SipResponse, cseq: int, *, same_branch: bool
    ) -> SipRequest:
        """The ACK of the bridge's re-INVITE: of a 2xx, a request of its own in the dialog;
        of a refusal, part of the INVITE's transaction (its Via, its Request-URI)."""
        uri, route = messages.routed(self.remote_target, self.route)
        branch = messages.top_branch(request) if same_branch else messages.new_branch()
        return messages.request(
            "ACK", request.uri if same_branch else uri,
            via_value=messages.via(self.transport, self.endpoint.local, branch),
            from_value=self.local, to_value=self.remote, call_id=self.call_id, cseq=cseq,
            route=route,
        )  # fmt: skip

    async def bye(self) -> int:
        """End the dialog from this side; returns the status of the BYE's answer (0: none)."""
        if self.ended:
            return 0
        self.ended = True
        self.timer.close()
        response = await send_request(
            self.endpoint, self._request("BYE"), await self.next_hop(), self.transport
        )
        return response.status_code if response is not None else 0

    async def refer(self, refer_to: str, within: float) -> Transfer:
        """Ask the far end to call ``refer_to`` (a blind transfer) and wait, at most ``within``
        seconds, for the NOTIFY that reports the new call's final status."""
        while not self.notified.empty():
            self.notified.get_nowait()
        request = self._request("REFER", contact=self.endpoint.contact())
        request.headers.set_single("Refer-To", f"<{refer_to}>")
        request.headers.set_single("Referred-By", self.endpoint.contact())
        response = await send_request(self.endpoint, request, await self.next_hop(), self.transport)
        if response is None:
            return Transfer(0, 0, "no answer to the REFER")
        if response.status_code >= 300:
            reason = f"{response.status_code} {response.reason_phrase}".strip()
            return Transfer(response.status_code, 0, f"the far end refused the REFER ({reason})")
        try:
            async with asyncio.timeout(within):
                while (status := await self.notified.get()) < 200:
                    pass
        except TimeoutError:
            return Transfer(response.status_code, 0, "no final NOTIFY for the REFER")
        if status >= 300:
            return Transfer(response.status_code, status, f"the transfer target answered {status}")
        return Transfer(response.status_code, status)

    def close(self) -> None:
        self.timer.close()
        if self._unacked is not None:
            self._unacked.task.cancel()
            self._unacked = None
        self.endpoint.drop_dialog(self.call_id)
