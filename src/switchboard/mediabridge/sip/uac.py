"""The outbound INVITE (RFC 3261 §13.2): provisional responses, 183 with SDP, digest retry on
401/407, the ring timer that sends CANCEL, ACK of every final response, and the dialog."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from dataclasses import dataclass

from aiosipua import SdpMessage, SipResponse, parse_sdp
from aiosipua.auth import SipDigestAuth, answer_challenge

from switchboard.mediabridge.config import Trunk
from switchboard.mediabridge.sip import checks, messages
from switchboard.mediabridge.sip.dialog import Dialog
from switchboard.mediabridge.sip.endpoint import SipEndpoint
from switchboard.mediabridge.sip.transaction import ClientTransaction, send_request


@dataclass
class InviteResult:
    """``status`` is the final SIP status (0: no response at all, timer B)."""

    status: int
    reason: str = ""
    rang_out: bool = False  # the ring timer expired and the bridge sent CANCEL
    cancelled: bool = False  # the platform hung up while it rang
    dialog: Dialog | None = None
    answer: SdpMessage | None = None
    early: SdpMessage | None = None
    answer_ms: int = 0


def _sdp(response: SipResponse) -> SdpMessage | None:
    if not response.body or "sdp" not in (response.content_type or "").lower():
        return None
    try:
        return parse_sdp(response.body.decode("utf-8", "replace"))
    except (ValueError, IndexError):
        return None


class Invite:
    """One INVITE to one trunk. ``cancel()`` (the platform hung up) CANCELs it while it rings."""

    def __init__(
        self,
        endpoint: SipEndpoint,
        trunk: Trunk,
        *,
        phone: str,
        caller: str,
        display_name: str,
        offer: bytes,
    ) -> None:
        self.endpoint = endpoint
        self.trunk = trunk
        self.offer = offer
        self.uri = f"sip:{phone}@{messages.host_port(trunk.host, trunk.port)}"
        display = messages.quoted(display_name)
        self.local = f"{display} <sip:{caller}@{trunk.from_domain}>;tag={messages.new_tag()}"
        self.to = f"<{self.uri}>"
        self.call_id = messages.new_call_id(endpoint.advertise)
        self._cancel = asyncio.Event()

    def cancel(self) -> None:
        self._cancel.set()

    async def run(self) -> InviteResult:
        trunk, endpoint = self.trunk, self.endpoint
        started = time.monotonic()
        address = await endpoint.resolve(trunk.address)
        if address is None:
            return InviteResult(status=0, reason=f"cannot resolve {trunk.host}")
        try:
            await endpoint.connect(address, trunk.transport)
        except OSError as exc:
            return InviteResult(status=0, reason=f"cannot connect ({exc.strerror or exc})")
        ring_deadline = started + trunk.ring_timeout_sec
        cseq, auth, early = 1, None, None
        while True:
            request = messages.request(
                "INVITE", self.uri,
                via_value=messages.via(trunk.transport, endpoint.local, messages.new_branch()),
                from_value=self.local, to_value=self.to, call_id=self.call_id, cseq=cseq,
                contact=endpoint.contact(), body=self.offer,
            )  # fmt: skip
            # what the trunk may send in the dialog (UPDATE among them, RFC 3311 §5.1), and
            # session timers: the trunk's 2xx may name either side the refresher, and names the
            # interval (the bridge asks for none, decision 0334)
            request.headers.set_single("Allow", checks.ALLOW)
            request.headers.set_single("Supported", ", ".join(checks.SUPPORTED))
            if auth is not None:
                request.headers.set_single(*auth)
            txn = ClientTransaction(endpoint, request, address, trunk.transport)
            txn.start()
            try:
                result = await self._await_final(txn, ring_deadline, started)
            except BaseException:
                txn.close()
                raise
            if result.early is None:
                result.early = early
            early = result.early
            if result.status in (401, 407) and auth is None and trunk.username:
                assert txn.final is not None
                auth = answer_challenge(
                    SipDigestAuth(trunk.username, trunk.password), txn.final, result.status,
                    "INVITE", self.uri,
                )  # fmt: skip
                txn.close()
                if auth is not None:
                    cseq += 1
                    continue
            if result.dialog is None:
                txn.close()
            else:
                result.dialog.register()
                # keep the transaction to answer retransmitted 200s with the ACK
                self._keep = txn
            return result

    async def _await_final(
        self, txn: ClientTransaction, ring_deadline: float, started: float
    ) -> InviteResult:
        rang_out = cancelled = False
        early: SdpMessage | None = None
        cancel_task: asyncio.Task[None] | None = None
        provisional = False
        try:
            while True:
                wait = max(0.0, ring_deadline - time.monotonic())
                if cancel_task is not None:
                    wait = 64 * self.endpoint.t1
                getter = asyncio.ensure_future(txn.next())
                stopper = asyncio.ensure_future(self._cancel.wait())
                done, _ = await asyncio.wait(
                    {getter, stopper}, timeout=wait, return_when=asyncio.FIRST_COMPLETED
                )
                stopper.cancel()
                if getter not in done:
                    getter.cancel()
                    if cancel_task is not None:
                        return InviteResult(status=487, reason="no answer to CANCEL",
                                            rang_out=rang_out, cancelled=cancelled)  # fmt: skip
                    if stopper in done:
                        cancelled = True
                    else:
                        rang_out = True
                    if provisional:
                        cancel_task = asyncio.ensure_future(self._send_cancel(txn))
                    elif cancelled or rang_out:
                        # no provisional yet: a CANCEL must wait for one (§9.1); give up
                        txn.close()
                        return InviteResult(status=0, reason="no provisional response",
                                            rang_out=rang_out, cancelled=cancelled)  # fmt: skip
                    continue
                response = getter.result()
                if response is None:
                    return InviteResult(status=0, reason="no answer to the INVITE (timer B)")
                status = response.status_code
                if status < 200:
                    provisional = True
                    early = _sdp(response) or early
                    continue
                if status < 300:
                    dialog = await self._dialog(txn, response)
                    answer = _sdp(response) or early
                    if cancel_task is not None:
                        # the callee answered as the CANCEL crossed: end the call at once
                        await dialog.bye()
                        dialog.close()
                        return InviteResult(status=487, reason="answered after CANCEL",
                                            rang_out=rang_out, cancelled=cancelled)  # fmt: skip
                    return InviteResult(
                        status=status, reason=response.reason_phrase, dialog=dialog,
                        answer=answer, early=early,
                        answer_ms=math.ceil((time.monotonic() - started) * 1000),
                    )  # fmt: skip
                self._ack_failure(txn, response)
                return InviteResult(
                    status=status, reason=response.reason_phrase, rang_out=rang_out,
                    cancelled=cancelled, early=early,
                )  # fmt: skip
        finally:
            if cancel_task is not None:
                cancel_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await cancel_task

    async def _send_cancel(self, txn: ClientTransaction) -> None:
        invite = txn.request
        cancel = messages.request(
            "CANCEL", invite.uri, via_value=invite.headers.get_first("via") or "",
            from_value=self.local, to_value=self.to, call_id=self.call_id,
            cseq=messages.cseq_of(invite)[0],
        )  # fmt: skip
        await send_request(self.endpoint, cancel, txn.addr, txn.transport)

    def _ack_failure(self, txn: ClientTransaction, response: SipResponse) -> None:
        """ACK of a non-2xx final response: part of the INVITE transaction (same branch)."""
        invite = txn.request
        ack = messages.request(
            "ACK", invite.uri, via_value=invite.headers.get_first("via") or "",
            from_value=self.local, to_value=response.headers.get_first("to") or self.to,
            call_id=self.call_id, cseq=messages.cseq_of(invite)[0],
        )  # fmt: skip
        txn.send_ack(ack)

    async def _dialog(self, txn: ClientTransaction, response: SipResponse) -> Dialog:
        target, addr = messages.contact_target(response)
        route = messages.route_set(response)
        remote = response.headers.get_first("to") or self.to
        cseq = messages.cseq_of(txn.request)[0]
        dialog = Dialog(
            endpoint=self.endpoint, call_id=self.call_id, local=self.local, remote=remote,
            remote_target=target or self.uri,
            addr=messages.next_hop(route, addr, txn.addr),
            transport=txn.transport, cseq=cseq, route=route, source=txn.addr,
        )  # fmt: skip
        if self.trunk.transport == "tcp":
            dialog.addr = txn.addr  # one connection carries the whole dialog
        uri, ack_route = messages.routed(dialog.remote_target, route)  # the ACK of a 2xx too
        ack = messages.request(
            "ACK", uri,
            via_value=messages.via(txn.transport, self.endpoint.local, messages.new_branch()),
            from_value=self.local, to_value=remote, call_id=self.call_id, cseq=cseq,
            route=ack_route,
        )  # fmt: skip
        txn.send_ack(ack, await dialog.next_hop())
        dialog.timer.answered(response)  # the session timer, as the 2xx sets it (RFC 4028 §7.2)
        return dialog

    def close(self) -> None:
        keep = getattr(self, "_keep", None)
        if keep is not None:
            keep.close()
