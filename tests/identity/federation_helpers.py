"""A small OpenID provider on real local ports, and the browser side of signing in through it.

The provider listens on 127.0.0.1 (its issuer) and on 127.0.0.2 (``elsewhere``: an address its
discovery may name, which an allowance for 127.0.0.1 alone does not open). It records every
request it receives, may hold one path back until the test releases it, and signs ID tokens
with a key of its own for the nonce its authorization endpoint was given."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import hashlib
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import pytest
from aiohttp import web
from httpx import ASGITransport, AsyncClient, Response
from joserfc import jwt
from joserfc.jwk import ECKey
from starlette.applications import Starlette

from switchboard.app import create_app
from switchboard.identity import clients
from switchboard.identity.federation import service as federation
from switchboard.identity.federation.secrets import ClientSecret, ClientSecrets
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from tests.aioserve import serving_on
from tests.conftest import PRIMARY_HOST
from tests.factories import TenantFixture

BASE = f"http://{PRIMARY_HOST}"
CONSOLE_CALLBACK = f"{BASE}/admin/callback"
VERIFIER = "federation-verifier-" + "x" * 40
CLIENT_ID = "acme-idp"
DISCOVERY = "/.well-known/openid-configuration"


def authorize_url() -> str:
    """The console's authorization request at this identity provider."""
    digest = hashlib.sha256(VERIFIER.encode()).digest()
    params = {
        "response_type": "code", "client_id": "console", "redirect_uri": CONSOLE_CALLBACK,
        "scope": "openid", "state": "console-state", "nonce": "console-nonce",
        "code_challenge": base64.urlsafe_b64encode(digest).rstrip(b"=").decode(),
        "code_challenge_method": "S256",
    }  # fmt: skip
    return f"{BASE}/oidc.ashx/authorize?{urlencode(params)}"


def start_url(name: str = "partners") -> str:
    return f"{BASE}/oidc.ashx/federation/{name}/start?{urlsplit(authorize_url()).query}"


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: dict[str, str] = {}
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._href = dict(attrs).get("href") if tag == "a" else None

    def handle_data(self, data: str) -> None:
        if self._href is not None and data.strip():
            self.links[data.strip()] = self._href
            self._href = None


def provider_link(page: Response, text: str) -> str | None:
    parser = _Links()
    parser.feed(page.text)
    href = parser.links.get(text)
    return None if href is None else urljoin(str(page.url), href)


def query_of(response: Response) -> dict[str, str]:
    assert response.status_code in (302, 303), response.text
    return {k: v[0] for k, v in parse_qs(urlsplit(response.headers["location"]).query).items()}


@dataclass
class FakeProvider:
    issuer: str = ""
    elsewhere: str = ""  # the same provider on 127.0.0.2
    key: ECKey = field(default_factory=lambda: ECKey.generate_key("P-256", private=True))
    # (listening address, path) of every request, in order
    seen: list[tuple[str, str]] = field(default_factory=list)
    # the Authorization header of each request to the token endpoint
    token_auth: list[str | None] = field(default_factory=list)
    discovery_status: int = 200
    discovery: dict[str, str] = field(default_factory=dict)  # fields replacing the usual ones
    held: dict[str, asyncio.Event] = field(default_factory=dict)  # path: answered once set
    arrived: dict[str, asyncio.Event] = field(default_factory=dict)  # path: set on arrival
    nonces: dict[str, str] = field(default_factory=dict)  # code: nonce

    def hold(self, path: str) -> asyncio.Event:
        """Answer ``path`` only once the returned event is set; ``arrived[path]`` tells when a
        request for it came."""
        self.arrived[path] = asyncio.Event()
        release = self.held[path] = asyncio.Event()
        return release

    def paths(self, address: str = "127.0.0.1") -> list[str]:
        return [path for where, path in self.seen if where == address]

    def id_token(self, nonce: str) -> str:
        now = int(time.time())
        claims = {
            "iss": self.issuer, "sub": "ext-1", "aud": CLIENT_ID, "iat": now, "exp": now + 300,
            "nonce": nonce, "preferred_username": "fed-user",
        }  # fmt: skip
        return jwt.encode({"alg": "ES256", "kid": "k1"}, claims, self.key)

    def app(self) -> web.Application:
        async def arrive(request: web.Request) -> None:
            address = request.transport.get_extra_info("sockname")[0] if request.transport else ""
            self.seen.append((address, request.path))
            if request.path in self.arrived:
                self.arrived[request.path].set()
            if request.path in self.held:
                await self.held[request.path].wait()

        async def discovery(request: web.Request) -> web.Response:
            await arrive(request)
            body = {
                "issuer": self.issuer, "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token", "jwks_uri": f"{self.issuer}/jwks",
            } | self.discovery  # fmt: skip
            return web.json_response(body, status=self.discovery_status)

        async def authorize(request: web.Request) -> web.Response:
            await arrive(request)
            query = request.query
            code = secrets.token_urlsafe(16)
            self.nonces[code] = query["nonce"]
            back = urlencode({"code": code, "state": query["state"]})
            raise web.HTTPFound(f"{query['redirect_uri']}?{back}")

        async def token(request: web.Request) -> web.Response:
            await arrive(request)
            self.token_auth.append(request.headers.get("Authorization"))
            form = await request.post()
            nonce = self.nonces.pop(str(form.get("code")), None)
            if nonce is None:
                return web.json_response({"error": "invalid_grant"}, status=400)
            body = {"access_token": "at", "token_type": "Bearer", "id_token": self.id_token(nonce)}
            return web.json_response(body)

        async def jwks(request: web.Request) -> web.Response:
            await arrive(request)
            public = self.key.as_dict(private=False) | {"kid": "k1", "alg": "ES256"}
            return web.json_response({"keys": [public]})

        app = web.Application()
        app.router.add_get(DISCOVERY, discovery)
        app.router.add_get("/authorize", authorize)
        app.router.add_post("/token", token)
        app.router.add_get("/jwks", jwks)
        return app


@pytest.fixture
async def provider() -> AsyncIterator[FakeProvider]:
    fake = FakeProvider()
    async with serving_on(fake.app(), "127.0.0.1", "127.0.0.2") as (fake.issuer, fake.elsewhere):
        try:
            yield fake
        finally:
            for release in fake.held.values():
                release.set()


@pytest.fixture
async def app(
    runtime: Runtime, acme: TenantFixture, clock: ManualClock
) -> AsyncIterator[Starlette]:
    clock.set(dt.datetime.now(dt.UTC))  # the provider's tokens are stamped with the real time
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        await clients.ensure_console_client(
            session, tenant=tenant, base_url=BASE, clock=runtime.clock
        )
    async with runtime.lifespan():
        yield create_app(runtime=runtime)


@pytest.fixture
async def browser(app: Starlette) -> AsyncIterator[AsyncClient]:
    """This identity provider through ASGI; the provider over the network. The provider shares
    the test's event loop: on a loaded run the wait is bounded at 30 s, not httpx's 5 s."""
    mounts = {f"all://{PRIMARY_HOST}": ASGITransport(app=app)}
    async with AsyncClient(mounts=mounts, base_url=BASE, timeout=30) as client:
        yield client


async def add_provider(
    runtime: Runtime, issuer: str, secret: ClientSecret, *, operator: bool = False, **options: Any
) -> None:
    spec = federation.ProviderSpec(
        name="partners", display_name="Partners", issuer=issuer, client_id=CLIENT_ID,
        secret=secret, first_login="create", **options,
    )  # fmt: skip
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        await federation.add_provider(
            session, tenant=tenant, spec=spec, client_secrets=ClientSecrets.of(runtime),
            now=runtime.clock.now(), operator=operator,
        )  # fmt: skip


async def sign_in(browser: AsyncClient) -> Response:
    """Choose Partners on the login page, pass the provider (which signs anyone in): the
    callback's answer."""
    started = await browser.get(start_url())
    assert started.status_code == 302, started.text
    at_provider = await browser.get(started.headers["location"])
    assert at_provider.status_code == 302, at_provider.text
    return await browser.get(at_provider.headers["location"])


def signed_in(callback: Response) -> None:
    assert callback.status_code == 302, callback.text
    assert callback.headers["location"].startswith(CONSOLE_CALLBACK + "?")
    assert "code" in query_of(callback)
