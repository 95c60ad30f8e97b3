"""Trunk health by OPTIONS (RFC 3261 §11): a trunk with ``options_ping_sec`` is asked every so
many seconds whether it is there. A trunk that does not answer, or answers 5xx or 6xx, is down
until it answers again, and a dial tries it only after every other trunk it names: a call does
not wait out timer B (32 s) on a trunk already known to be gone. Decision 0332.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from switchboard.mediabridge.config import Trunk
from switchboard.mediabridge.sip import messages
from switchboard.mediabridge.sip.endpoint import SipEndpoint
from switchboard.mediabridge.sip.pertrunk import OnTrunk, PerTrunk
from switchboard.mediabridge.sip.transaction import send_request

log = logging.getLogger("switchboard.mediabridge.sip")


@dataclass
class TrunkPing(OnTrunk):
    """Asks ``trunk`` with OPTIONS while ``run`` runs; ``reachable`` is None until it answers or
    fails once."""

    reachable: bool | None = field(default=None, init=False)
    failure: str = field(default="", init=False)
    checked_at: float = field(default=0.0, init=False)

    def status(self) -> dict[str, object]:
        """What ``/v1/health`` shows of this trunk."""
        state = {None: "unknown", True: "up", False: "down"}[self.reachable]
        ago = int(self.clock() - self.checked_at) if self.reachable is not None else 0
        return {"state": state, "checkedSecAgo": ago, "failure": self.failure}

    async def run(self) -> None:
        while True:
            failure = await self.check()
            self.checked_at = self.clock()
            if failure and self.reachable is not False:
                log.warning("trunk %s: down (%s)", self.trunk.id, failure)
            elif not failure and self.reachable is False:
                log.info("trunk %s: up again", self.trunk.id)
            self.reachable, self.failure = not failure, failure
            await self.sleep(self.trunk.options_ping_sec)

    async def check(self) -> str:
        """One OPTIONS; why the trunk is down, or "" when it answered."""
        trunk, endpoint = self.trunk, self.endpoint
        address = await endpoint.resolve(trunk.address)
        if address is None:
            return f"cannot resolve {trunk.host}"
        try:
            await endpoint.connect(address, trunk.transport)
        except OSError as exc:
            return f"cannot connect ({exc.strerror or exc})"
        uri = f"sip:{messages.host_port(trunk.host, trunk.port)}"
        request = messages.request(
            "OPTIONS", uri,
            via_value=messages.via(trunk.transport, endpoint.local, messages.new_branch()),
            from_value=f"<sip:switchboard@{trunk.from_domain}>;tag={messages.new_tag()}",
            to_value=f"<{uri}>", call_id=messages.new_call_id(endpoint.advertise), cseq=1,
        )  # fmt: skip
        request.headers.set_single("Accept", "application/sdp")
        response = await send_request(endpoint, request, address, trunk.transport)
        if response is None:
            return "no answer to OPTIONS"
        if response.status_code >= 500:
            return f"{response.status_code} {response.reason_phrase}".strip()
        return ""


class TrunkPings(PerTrunk[TrunkPing]):
    """The OPTIONS pings of the trunks that ask for them."""

    def __init__(self, endpoint: SipEndpoint, trunks: dict[str, Trunk]) -> None:
        super().__init__(
            {tid: TrunkPing(endpoint, t) for tid, t in trunks.items() if t.options_ping_sec}
        )

    def down(self, trunk_id: str) -> bool:
        """Whether the trunk's last OPTIONS went unanswered or was refused."""
        ping = self.all.get(trunk_id)
        return ping is not None and ping.reachable is False
