"""Client transactions (RFC 3261 §17.1): retransmission over UDP and the give-up timers.

An INVITE is retransmitted at T1, 2·T1, 4·T1 ... (timer A) until a response arrives, and
abandoned after 64·T1 without one (timer B). A non-INVITE request is retransmitted with the
interval doubling up to T2 (timer E) until its final response, for at most 64·T1 (timer F).
Over TCP nothing is retransmitted; the give-up timers still apply.

On the server side, the 2xx to an INVITE (the first one or a re-INVITE) is resent until its
ACK, the interval doubling from T1 up to T2, for at most 64·T1 (``resend_2xx``, RFC 3261
§13.3.1.4).
"""

from __future__ import annotations

import asyncio
import contextlib

from aiosipua import SipRequest, SipResponse

from switchboard.mediabridge.sip import messages
from switchboard.mediabridge.sip.endpoint import T2, SipEndpoint


class ClientTransaction:
    def __init__(
        self, endpoint: SipEndpoint, request: SipRequest, addr: tuple[str, int], transport: str
    ) -> None:
        self.endpoint = endpoint
        self.request = request
        self.addr = addr
        self.transport = transport
        self.branch = messages.top_branch(request)
        self.is_invite = request.method == "INVITE"
        self.responses: asyncio.Queue[SipResponse | None] = asyncio.Queue()
        self.final: SipResponse | None = None
        self.ack: SipRequest | None = None
        self._heard = False
        self._retransmit: asyncio.Task[None] | None = None
        self._give_up: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.endpoint.add_client(self.branch, self.request.method, self)
        self.endpoint.send(self.request, self.addr, self.transport)
        if self.transport == "udp":
            self._retransmit = asyncio.ensure_future(self._resend())
        self._give_up = asyncio.ensure_future(self._timeout())

    def close(self) -> None:
        self.endpoint.drop_client(self.branch, self.request.method)
        for task in (self._retransmit, self._give_up):
            if task is not None:
                task.cancel()

    async def next(self) -> SipResponse | None:
        """The next response; ``None`` when the give-up timer (B or F) fired first."""
        return await self.responses.get()

    async def _resend(self) -> None:
        interval = self.endpoint.t1
        while True:
            await asyncio.sleep(interval)
            self.endpoint.send(self.request, self.addr, self.transport)
            interval = interval * 2 if self.is_invite else min(interval * 2, T2)

    async def _timeout(self) -> None:
        await asyncio.sleep(64 * self.endpoint.t1)
        if self.final is None and not (self.is_invite and self._heard):
            self._stop_resending()
            self.responses.put_nowait(None)

    def _stop_resending(self) -> None:
        if self._retransmit is not None:
            self._retransmit.cancel()
            self._retransmit = None

    def on_response(self, response: SipResponse) -> None:
        if messages.cseq_of(response)[1] != self.request.method:
            return
        self._heard = True
        if self.is_invite:
            self._stop_resending()
        if response.status_code < 200:
            self.responses.put_nowait(response)
            return
        if self.final is not None:
            # a retransmitted final response: the ACK was lost, send it again
            if self.ack is not None and response.status_code >= 200:
                self.endpoint.send(self.ack, self.ack_addr, self.transport)
            return
        self.final = response
        self._stop_resending()
        if self._give_up is not None:
            self._give_up.cancel()
        self.responses.put_nowait(response)

    @property
    def ack_addr(self) -> tuple[str, int]:
        return getattr(self, "_ack_addr", self.addr)

    def send_ack(self, ack: SipRequest, addr: tuple[str, int] | None = None) -> None:
        self.ack = ack
        self._ack_addr = addr or self.addr
        self.endpoint.send(ack, self._ack_addr, self.transport)


async def send_request(
    endpoint: SipEndpoint, request: SipRequest, addr: tuple[str, int], transport: str
) -> SipResponse | None:
    """Send a non-INVITE request and wait for its final response (``None``: timer F)."""
    txn = ClientTransaction(endpoint, request, addr, transport)
    txn.start()
    try:
        while True:
            response = await txn.next()
            if response is None or response.status_code >= 200:
                return response
    finally:
        with contextlib.suppress(Exception):
            txn.close()


async def resend_2xx(
    endpoint: SipEndpoint, response: SipResponse, addr: tuple[str, int], transport: str
) -> None:
    """Resend the 2xx of an INVITE over UDP until cancelled (its ACK came), returning after
    64·T1 without one; over TCP, only wait as long."""
    interval = endpoint.t1
    elapsed = 0.0
    while elapsed < 64 * endpoint.t1:
        await asyncio.sleep(interval)
        elapsed += interval
        if transport == "udp":
            endpoint.send(response, addr, transport)
        interval = min(interval * 2, T2)
