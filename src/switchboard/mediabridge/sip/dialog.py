"""A confirmed dialog (RFC 3261 §12): BYE in both directions, whichever side ends the call."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from aiosipua import SipRequest

from switchboard.mediabridge.sip import messages
from switchboard.mediabridge.sip.endpoint import SipEndpoint
from switchboard.mediabridge.sip.transaction import send_request

log = logging.getLogger("switchboard.mediabridge.sip")


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

    def register(self) -> None:
        self.endpoint.add_dialog(self.call_id, self)

    def on_request(self, request: SipRequest, addr: tuple[str, int], transport: str) -> None:
        method = request.method
        if method == "BYE":
            self.endpoint.send(messages.response(request, 200), addr, transport)
            self.ended = True
            self.far_bye.set()
        elif method == "ACK":
            return
        elif method in ("INFO", "OPTIONS", "UPDATE") or method == "CANCEL":
            self.endpoint.send(messages.response(request, 200), addr, transport)
        else:
            # re-INVITE, REFER: the bridge keeps the media it negotiated
            self.endpoint.send(messages.response(request, 488), addr, transport)

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

    def close(self) -> None:
        self.endpoint.drop_dialog(self.call_id)
