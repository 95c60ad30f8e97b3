"""One delivery attempt on the wire: the shared aiohttp session, both signatures, the POST."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence

import aiohttp

from switchboard import __version__
from switchboard.kit.crypto import SecretBox
from switchboard.kit.destinations import (
    GuardedResolver,
    IPNetwork,
    RefusedDestination,
    check_literal_host,
)
from switchboard.platform.webhooks import service
from switchboard.platform.webhooks.queue import Claimed
from switchboard.platform.webhooks.signing import (
    platform_signature,
    standard_key,
    standard_signature,
)
from switchboard.platform.webhooks.tasks._outcomes import Outcome

SNIPPET_MAX = 512
USER_AGENT = f"switchboard-webhooks/{__version__}"
CACHE_MAX = 10_000


def _describe(exc: BaseException) -> str:
    if isinstance(exc, aiohttp.ClientConnectorDNSError) and isinstance(
        exc.os_error, RefusedDestination
    ):
        return f"refused: {exc.os_error}"
    if isinstance(exc, RefusedDestination):
        return f"refused: {exc}"
    if isinstance(exc, TimeoutError):
        return "timeout"
    return f"{type(exc).__name__}: {exc}"[:200]


class Poster:
    """The sender's HTTP side: one ``aiohttp.ClientSession`` (decision 0200) whose resolver
    enforces the SSRF rules (0205), and the signed headers of each attempt (0204)."""

    def __init__(
        self, *, box: SecretBox, allow: Sequence[IPNetwork], timeout: float, limit: int
    ) -> None:
        self.box = box
        self.allow = allow
        self.timeout = timeout
        self.limit = limit
        self._http: aiohttp.ClientSession | None = None
        self._secrets: dict[str, tuple[str, bytes]] = {}
        self._literal_checked: dict[str, str | None] = {}

    def open(self) -> None:
        connector = aiohttp.TCPConnector(
            resolver=GuardedResolver(self.allow), limit=self.limit, ttl_dns_cache=10
        )
        self._http = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=self.timeout, connect=min(self.timeout, 5.0)),
            headers={"User-Agent": USER_AGENT},
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
        )

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()

    def _keys(self, sealed: str) -> tuple[str, bytes]:
        keys = self._secrets.get(sealed)
        if keys is None:
            secret = self.box.open(sealed)
            keys = (secret, standard_key(secret))
            if len(self._secrets) > CACHE_MAX:
                self._secrets.clear()
            self._secrets[sealed] = keys
        return keys

    def _check_literal(self, url: str) -> None:
        if url not in self._literal_checked:
            if len(self._literal_checked) > CACHE_MAX:
                self._literal_checked.clear()
            try:
                check_literal_host(url, self.allow)
                self._literal_checked[url] = None
            except RefusedDestination as exc:
                self._literal_checked[url] = str(exc)
        refusal = self._literal_checked[url]
        if refusal is not None:
            raise RefusedDestination(refusal)

    def headers(self, item: Claimed, timestamp: int) -> dict[str, str]:
        secret, key = self._keys(item.secret_sealed)
        return {
            "Content-Type": "application/json",
            "X-Platform-Event": item.event,
            "X-Platform-Signature": platform_signature(secret, item.body),
            "X-Platform-Delivery-Id": item.id,
            "X-Platform-Attempt": str(min(item.attempt, service.MAX_ATTEMPTS)),
            "webhook-id": item.id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": standard_signature(key, item.id, timestamp, item.body),
        }

    async def post(self, item: Claimed, started_at: dt.datetime) -> Outcome:
        """POST ``item`` once; the outcome says what happened (never raises for the wire's
        failures; cancellation propagates and records nothing)."""
        assert self._http is not None
        outcome = Outcome(item, started_at)
        began = time.perf_counter()
        try:
            self._check_literal(item.url)
            headers = self.headers(item, int(started_at.timestamp()))
            async with self._http.post(
                item.url, data=item.body, headers=headers, allow_redirects=False
            ) as response:
                outcome.status_code = response.status
                raw = await response.content.read(SNIPPET_MAX)
                outcome.snippet = raw.decode("utf-8", "replace")[:SNIPPET_MAX]
        except (TimeoutError, aiohttp.ClientError, RefusedDestination, ValueError) as exc:
            outcome.error = _describe(exc)
        finally:
            outcome.latency_ms = int((time.perf_counter() - began) * 1000)
        return outcome
