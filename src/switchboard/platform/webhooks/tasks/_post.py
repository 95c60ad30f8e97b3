"""One delivery attempt on the wire: both signatures and the POST (decision 0218)."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Sequence

from switchboard import __version__
from switchboard.kit.crypto import SecretBox
from switchboard.kit.destinations import IPNetwork, RefusedDestination
from switchboard.kit.posting import PostClient
from switchboard.platform.webhooks import service
from switchboard.platform.webhooks.queue import Claimed
from switchboard.platform.webhooks.signing import Signer
from switchboard.platform.webhooks.tasks._outcomes import Outcome

log = logging.getLogger("switchboard.webhooks")

SNIPPET_MAX = 512
USER_AGENT = f"switchboard-webhooks/{__version__}"
CACHE_MAX = 10_000


def _describe(exc: BaseException) -> str:
    if isinstance(exc, RefusedDestination):
        return f"refused: {exc}"
    if isinstance(exc, TimeoutError):
        return "timeout"
    return f"{type(exc).__name__}: {exc}"[:200]


class Poster:
    """The sender's HTTP side: one ``PostClient`` (decision 0218) whose destinations pass the
    SSRF rules (0205), and the signed headers of each attempt (0204)."""

    def __init__(
        self, *, box: SecretBox, allow: Sequence[IPNetwork], timeout: float, limit: int
    ) -> None:
        self.box = box
        self.allow = allow
        self.timeout = timeout
        self.limit = limit
        self._http: PostClient | None = None
        self._signers: dict[str, Signer] = {}

    def open(self) -> None:
        self._http = PostClient(
            allow=self.allow,
            timeout=self.timeout,
            connect_timeout=min(self.timeout, 5.0),
            limit=self.limit,
            user_agent=USER_AGENT,
            snippet=SNIPPET_MAX,
        )

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()

    def _signer(self, sealed: str) -> Signer:
        signer = self._signers.get(sealed)
        if signer is None:
            signer = Signer(self.box.open(sealed))
            if len(self._signers) > CACHE_MAX:
                self._signers.clear()
            self._signers[sealed] = signer
        return signer

    def headers(self, item: Claimed, timestamp: int) -> dict[str, str]:
        signer = self._signer(item.secret_sealed)
        return {
            "Content-Type": "application/json",
            "X-Platform-Event": item.event,
            "X-Platform-Signature": signer.platform(item.body),
            "X-Platform-Delivery-Id": item.id,
            "X-Platform-Attempt": str(min(item.attempt, service.MAX_ATTEMPTS)),
            "webhook-id": item.id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signer.standard(item.id, timestamp, item.body),
        }

    async def post(self, item: Claimed, started_at: dt.datetime) -> Outcome:
        """POST ``item`` once; the outcome says what happened (never raises for the wire's
        failures; cancellation propagates and records nothing)."""
        assert self._http is not None
        outcome = Outcome(item, started_at)
        began = time.perf_counter()
        try:
            headers = self.headers(item, int(started_at.timestamp()))
            answer = await self._http.post(item.url, item.body, headers)
            outcome.status_code = answer.status
            outcome.snippet = answer.head.decode("utf-8", "replace")
        except (TimeoutError, OSError, ValueError) as exc:
            outcome.error = _describe(exc)
        except Exception as exc:  # a fault of ours: the attempt fails, the sender goes on
            log.exception("webhook delivery %s: the attempt failed unexpectedly", item.id)
            outcome.error = _describe(exc)
        finally:
            outcome.latency_ms = int((time.perf_counter() - began) * 1000)
        return outcome
