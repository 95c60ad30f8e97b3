"""An inbound INVITE (RFC 3261 §13.3): provisional and final answers, the 2xx resent until the
ACK (timer G up to T2, for at most 64·T1), answers to retransmitted INVITEs, and CANCEL. A
re-INVITE that comes before the first INVITE is over gets 491 or 500 (§14.2)."""

from __future__ import annotations

import asyncio
import contextlib
import secrets

from aiosipua import SipRequest, SipResponse

from switchboard.mediabridge.sip import checks, messages
from switchboard.mediabridge.sip.dialog import Dialog
from switchboard.mediabridge.sip.endpoint import SipEndpoint
from switchboard.mediabridge.sip.timer import session_timer
from switchboard.mediabridge.sip.transaction import resend_2xx


class ServerInvite:
    def __init__(
        self, endpoint: SipEndpoint, request: SipRequest, addr: tuple[str, int], transport: str
    ) -> None:
        self.endpoint = endpoint
        self.request = request
        self.addr = addr
        self.transport = transport
        self.call_id = request.call_id or ""
        self.to_tag = messages.new_tag()
        self.acked = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.final: SipResponse | None = None
        self.dialog: Dialog | None = None
        self._last: SipResponse | None = None
        self._resend: asyncio.Task[None] | None = None

    def register(self) -> None:
        self.endpoint.add_dialog(self.call_id, self)

    def close(self) -> None:
        if self._resend is not None:
            self._resend.cancel()
        if self.dialog is None or self.dialog.ended:
            self.endpoint.drop_dialog(self.call_id)

    def on_request(self, request: SipRequest, addr: tuple[str, int], transport: str) -> None:
        method = request.method
        if method == "INVITE":
            self._invite(request, addr, transport)
        elif method == "ACK":
            if messages.cseq_of(request)[0] != messages.cseq_of(self.request)[0]:
                return  # the ACK of a 491 or 500 (above)
            self.acked.set()
            if self._resend is not None:
                self._resend.cancel()
            if self.dialog is not None:
                self.endpoint.add_dialog(self.call_id, self.dialog)
        elif method == "CANCEL":
            self.endpoint.send(messages.response(request, 200), addr, transport)
            if self.final is None:
                self.respond(487)
                self.cancelled.set()
        elif self.dialog is not None:
            self.dialog.on_request(request, addr, transport)
        else:
            self.endpoint.send(messages.response(request, 481), addr, transport)

    def _invite(self, request: SipRequest, addr: tuple[str, int], transport: str) -> None:
        """The first INVITE again (a retransmission: the last answer again), or a re-INVITE
        while it is not over: 491 once its 2xx went out and awaits the ACK, 500 with
        ``Retry-After`` (0-10 s) before its final answer (RFC 3261 §14.2)."""
        cseq = messages.cseq_of(request)[0]
        first = messages.cseq_of(self.request)[0]
        if cseq == first:
            if self._last is not None:
                self.endpoint.send(self._last, self.addr, self.transport)
            return
        if cseq > first and self.final is not None and self.final.status_code < 300:
            answer = messages.response(request, 491)
        else:
            answer = messages.response(
                request, 500, extra={"Retry-After": str(secrets.randbelow(11))}
            )
        self.endpoint.send(answer, addr, transport)

    def respond(self, status: int, body: bytes = b"", extra: dict[str, str] | None = None) -> bool:
        """Send a response; False when a final one went first (a CANCEL crossed the call)."""
        if self.final is not None:
            return False
        contact = self.endpoint.contact() if status < 300 and status > 100 else ""
        if 200 <= status < 300:
            extra = {**checks.CAPABILITIES, **session_timer(self.request)[1], **(extra or {})}
        response = messages.response(
            self.request, status, to_tag=self.to_tag if status > 100 else "", contact=contact,
            body=body, extra=extra,
        )  # fmt: skip
        self._last = response
        if status >= 200:
            self.final = response
        self.endpoint.send(response, self.addr, self.transport)
        if 200 <= status < 300:
            self.dialog = self._make_dialog(response)
            # whoever the 2xx names refreshes; the bridge ends a session the far end stops
            # refreshing (decision 0334)
            self.dialog.timer.took(response.headers.get_first("session-expires") or "")
            if self.transport == "udp":
                self._resend = asyncio.ensure_future(
                    resend_2xx(self.endpoint, response, self.addr, self.transport)
                )
        return True

    async def wait_ack(self) -> bool:
        """True once the caller ACKed the 2xx; False after 64·T1 without it."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(64 * self.endpoint.t1):
                await self.acked.wait()
                return True
        return False

    def _make_dialog(self, response: SipResponse) -> Dialog:
        target, addr = messages.contact_target(self.request)
        route = messages.route_set(self.request)
        # over TCP one connection carries the whole dialog
        tcp = self.transport == "tcp"
        addr = self.addr if tcp else messages.next_hop(route, addr, self.addr)
        return Dialog(
            endpoint=self.endpoint, call_id=self.call_id,
            local=response.headers.get_first("to") or "",
            remote=self.request.headers.get_first("from") or "",
            remote_target=target or self.request.uri,
            addr=addr,
            transport=self.transport, cseq=0, remote_cseq=messages.cseq_of(self.request)[0],
            route=route, source=self.addr,
        )  # fmt: skip
