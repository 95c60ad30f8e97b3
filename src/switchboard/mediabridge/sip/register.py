"""Registration at a trunk's registrar (RFC 3261 §10.2): trunks with ``register = true`` are
told where the bridge takes their calls, and told again before the binding expires.

One registration a trunk: the same Call-ID and a rising CSeq, the trunk's digest credentials
answering a 401 or 407 (kept for the next refresh, answered afresh when the registrar
challenges again), ``423 Interval Too Brief`` answered with its ``Min-Expires``. The binding is
refreshed half-way through a short grant and 30 s before a long one ends; a refused or
unanswered REGISTER is tried again after ``Retry-After`` or a backoff from 30 s to 10 min. When
the bridge stops, each binding is removed (``Expires: 0``), waiting at most 2 s. Decision 0331.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Literal

from aiosipua import SipRequest, SipResponse
from aiosipua.auth import SipDigestAuth, answer_challenge

from switchboard.mediabridge.config import Trunk
from switchboard.mediabridge.sip import messages
from switchboard.mediabridge.sip.endpoint import SipEndpoint
from switchboard.mediabridge.sip.pertrunk import OnTrunk, PerTrunk
from switchboard.mediabridge.sip.transaction import send_request

log = logging.getLogger("switchboard.mediabridge.sip")

REFRESH_MARGIN_SEC = 30.0  # a binding is refreshed this long before it ends, or half-way
RETRY_FIRST_SEC = 30.0
RETRY_MAX_SEC = 600.0
UNREGISTER_WITHIN_SEC = 2.0
# the rounds of one registration: a 423 and a challenge each take one more REGISTER
MAX_ROUNDS = 4

State = Literal["registering", "registered", "failed"]


@dataclass
class Outcome:
    """One registration attempt: the grant in seconds (0: failed), the registrar's wish of
    when to try again (``Retry-After``, 0: none), why it failed."""

    granted: float = 0.0
    retry_after: float = 0.0
    failure: str = ""


@dataclass
class Registration(OnTrunk):
    """Keeps the bridge registered at ``trunk``'s registrar while ``run`` runs."""

    state: State = field(default="registering", init=False)
    failure: str = field(default="", init=False)
    expires_at: float = field(default=0.0, init=False)
    cseq: int = field(default=0, init=False)
    uri: str = field(init=False)
    aor: str = field(init=False)
    tag: str = field(init=False)
    call_id: str = field(init=False)
    _auth: tuple[str, str] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.uri = f"sip:{self.trunk.from_domain}"
        self.aor = f"<sip:{self.trunk.username}@{self.trunk.from_domain}>"
        self.tag = messages.new_tag()
        self.call_id = messages.new_call_id(self.endpoint.advertise)

    def status(self) -> dict[str, object]:
        """What ``/v1/health`` shows of this registration."""
        left = max(0, int(self.expires_at - self.clock())) if self.state == "registered" else 0
        return {"state": self.state, "expiresInSec": left, "failure": self.failure}

    async def run(self) -> None:
        failures = 0
        while True:
            outcome = await self.register(self.trunk.register_expires)
            if outcome.granted:
                if self.state != "registered":
                    log.info("trunk %s: registered for %d s", self.trunk.id, outcome.granted)
                failures = 0
                self.state, self.failure = "registered", ""
                self.expires_at = self.clock() + outcome.granted
                margin = min(outcome.granted / 2, REFRESH_MARGIN_SEC)
                await self.sleep(outcome.granted - margin)
                continue
            failures += 1
            self.state, self.failure = "failed", outcome.failure
            wait = outcome.retry_after or min(RETRY_FIRST_SEC * 2 ** (failures - 1), RETRY_MAX_SEC)
            log.warning(
                "trunk %s: registration failed (%s); trying again in %d s",
                self.trunk.id, outcome.failure, wait,
            )  # fmt: skip
            await self.sleep(wait)

    async def unregister(self) -> None:
        """Remove the binding (``Expires: 0``), waiting at most ``UNREGISTER_WITHIN_SEC``."""
        if self.state != "registered":
            return
        outcome = Outcome(failure="no answer in time")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(UNREGISTER_WITHIN_SEC):
                outcome = await self.register(0)
        self.state = "registering"
        if outcome.failure:
            log.warning("trunk %s: registration not removed (%s)", self.trunk.id, outcome.failure)
        else:
            log.info("trunk %s: registration removed", self.trunk.id)

    async def register(self, expires: int) -> Outcome:
        """One REGISTER asking for ``expires`` seconds, with what it takes: the answer to a
        challenge, a longer interval after a 423."""
        address = await self.endpoint.resolve(self.trunk.address)
        if address is None:
            return Outcome(failure=f"cannot resolve {self.trunk.host}")
        challenged = False
        for _ in range(MAX_ROUNDS):
            response = await send_request(
                self.endpoint, self._request(expires), address, self.trunk.transport
            )
            if response is None:
                return Outcome(failure="no answer to the REGISTER")
            status = response.status_code
            if 200 <= status < 300:
                return Outcome(granted=self._granted(response, expires) if expires else 1)
            if status in (401, 407) and not challenged:
                challenged = True
                self._auth = answer_challenge(
                    SipDigestAuth(self.trunk.username, self.trunk.password), response, status,
                    "REGISTER", self.uri,
                )  # fmt: skip
                if self._auth is not None:
                    continue
            if status == 423 and expires:
                wanted = _seconds(response.headers.get_first("min-expires"))
                if wanted > expires:
                    expires = wanted
                    continue
            return Outcome(
                retry_after=_seconds(response.headers.get_first("retry-after")),
                failure=f"{status} {response.reason_phrase}".strip(),
            )
        return Outcome(failure="the registrar asked for more than the bridge could send")

    def _request(self, expires: int) -> SipRequest:
        self.cseq += 1
        request = messages.request(
            "REGISTER", self.uri,
            via_value=messages.via(
                self.trunk.transport, self.endpoint.local, messages.new_branch()
            ),
            from_value=f"{self.aor};tag={self.tag}", to_value=self.aor, call_id=self.call_id,
            cseq=self.cseq, contact=self.endpoint.contact(self.trunk.username),
        )  # fmt: skip
        request.headers.set_single("Expires", str(expires))
        if self._auth is not None:
            request.headers.set_single(*self._auth)
        return request

    def _granted(self, response: SipResponse, asked: int) -> float:
        """The binding's lifetime: our Contact's ``expires`` in the answer, else its
        ``Expires`` header, else what was asked (RFC 3261 §10.2.4)."""
        host, port = self.endpoint.local
        for contact in response.contact:
            if contact.uri.host.strip("[]") == host and (contact.uri.port or 5060) == port:
                granted = _seconds(contact.params.get("expires"))
                if granted:
                    return granted
        return _seconds(response.headers.get_first("expires")) or asked


def _seconds(value: str | None) -> int:
    try:
        return max(0, int((value or "").split(";")[0].strip()))
    except ValueError:
        return 0


class Registrations(PerTrunk[Registration]):
    """The registrations of the trunks that ask for one."""

    def __init__(self, endpoint: SipEndpoint, trunks: dict[str, Trunk]) -> None:
        super().__init__(
            {tid: Registration(endpoint, trunk) for tid, trunk in trunks.items() if trunk.register}
        )

    async def aclose(self) -> None:
        await super().aclose()
        await asyncio.gather(*(r.unregister() for r in self.all.values()))
