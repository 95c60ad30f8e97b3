"""A confirmed dialog (RFC 3261 §12): BYE in both directions, whichever side ends the call, and
the blind transfer (REFER, RFC 3515) with the NOTIFYs that report how it went."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from aiosipua import SipRequest

from switchboard.mediabridge.sip import checks, messages
from switchboard.mediabridge.sip.endpoint import SipEndpoint
from switchboard.mediabridge.sip.transaction import send_request

log = logging.getLogger("switchboard.mediabridge.sip")


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
    far_bye: asyncio.Event = field(default_factory=asyncio.Event)
    ended: bool = False
    # the status lines of the ``Event: refer`` NOTIFYs' sipfrag bodies, as they arrive
    notified: asyncio.Queue[int] = field(default_factory=asyncio.Queue)

    def register(self) -> None:
        self.endpoint.add_dialog(self.call_id, self)

    def on_request(self, request: SipRequest, addr: tuple[str, int], transport: str) -> None:
        method = request.method
        status, extra = 200, {}
        if not self._ours(request):
            status = 481  # the Call-ID of this dialog with other tags (RFC 3261 §12.2.2)
        elif method == "ACK":
            return
        elif method == "BYE":
            self.ended = True
            self.far_bye.set()
        elif method == "NOTIFY":
            event = (request.headers.get_first("event") or "").split(";")[0].strip().lower()
            if event == "refer":
                self.notified.put_nowait(_sipfrag_status(request.body or b""))
        elif method == "OPTIONS":
            extra = checks.CAPABILITIES
        elif method in ("INVITE", "UPDATE") and (method == "INVITE" or request.body):
            # a re-INVITE or an UPDATE with an offer: the bridge keeps the media it negotiated
            status = 488
        elif method not in ("INFO", "UPDATE", "CANCEL"):
            refusal = checks.method_refusal(method)  # REFER from the far end, unknown methods
            status, extra = refusal.status, refusal.headers
        if method != "ACK":
            self.endpoint.send(messages.response(request, status, extra=extra), addr, transport)

    def _ours(self, request: SipRequest) -> bool:
        """The far end's requests carry its tag in From and this side's in To."""
        theirs = messages.tag_of(request.headers.get_first("from"))
        ours = messages.tag_of(request.headers.get_first("to"))
        return theirs == messages.tag_of(self.remote) and ours == messages.tag_of(self.local)

    async def bye(self) -> int:
        """End the dialog from this side; returns the status of the BYE's answer (0: none)."""
        if self.ended:
            return 0
        self.ended = True
        self.cseq += 1
        request = messages.request(
            "BYE", self.remote_target,
            via_value=messages.via(self.transport, self.endpoint.local, messages.new_branch()),
            from_value=self.local, to_value=self.remote, call_id=self.call_id, cseq=self.cseq,
        )  # fmt: skip
        response = await send_request(self.endpoint, request, self.addr, self.transport)
        return response.status_code if response is not None else 0

    async def refer(self, refer_to: str, within: float) -> Transfer:
        """Ask the far end to call ``refer_to`` (a blind transfer) and wait, at most ``within``
        seconds, for the NOTIFY that reports the new call's final status."""
        while not self.notified.empty():
            self.notified.get_nowait()
        self.cseq += 1
        request = messages.request(
            "REFER", self.remote_target,
            via_value=messages.via(self.transport, self.endpoint.local, messages.new_branch()),
            from_value=self.local, to_value=self.remote, call_id=self.call_id, cseq=self.cseq,
            contact=self.endpoint.contact(),
        )  # fmt: skip
        request.headers.set_single("Refer-To", f"<{refer_to}>")
        request.headers.set_single("Referred-By", self.endpoint.contact())
        response = await send_request(self.endpoint, request, self.addr, self.transport)
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
        self.endpoint.drop_dialog(self.call_id)
