"""Signing in through an external OpenID Connect provider: a second switchboard identity
provider, run as its own process with its own database and set up with its CLI, is the broker.
The browser is scripted over real HTTP (the broker) and the ASGI app (this identity provider)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import httpx
import pytest
from httpx import ASGITransport, AsyncClient, Response
from joserfc import jwt
from joserfc.jwk import KeySet
from starlette.applications import Starlette

from switchboard.identity import service as identity
from switchboard.identity.federation import service as federation
from switchboard.identity.federation.broker import REFETCH_GAP_SECONDS, ProviderCache, fetch_json
from switchboard.identity.federation.endpoints import providers
from switchboard.identity.federation.secrets import ClientSecrets, SecretReference
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants
from tests.conftest import PRIMARY_HOST, TEST_SECRET
from tests.identity.federation_helpers import (
    BASE,
    CONSOLE_CALLBACK,
    VERIFIER,
    app,
    authorize_url,
    browser,
    provider_link,
    query_of,
)
from tests.identity.signin_helpers import parse_form
from tests.ports import free_port

__all__ = ["app", "browser"]

pytestmark = pytest.mark.slow

BROKER_PASSWORD = "broker password 1"
SWITCHBOARD = [sys.executable, "-m", "switchboard"]


@dataclass
class Broker:
    issuer: str
    client_id: str
    secret_file: Path
    env: dict[str, str]
    port: int
    process: subprocess.Popen[bytes]

    def restart(self) -> None:
        """Stop the broker's process and start it again (it loads its keys afresh)."""
        self.process.terminate()
        self.process.wait(timeout=15)
        self.process = _serve(self.env, self.port)


def _serve(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    """``switchboard serve`` on ``port``, once it answers."""
    process = subprocess.Popen(
        [*SWITCHBOARD, "serve", "--port", str(port), "--no-workers"], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 90  # generous: the machine may be busy
    while True:  # a real process on a real port: wait until it answers
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError("the broker did not start")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.1)


# Runs each command line given (as JSON, with its standard input) through the CLI's entry point,
# in one process: the commands are the operator's, the interpreter starts once.
CLI_SCRIPT = """
import contextlib, io, json, sys
from switchboard.cli import main
for args, stdin in json.loads(sys.argv[1]):
    sys.stdin = io.StringIO(stdin)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(args, standalone_mode=False)
    print(json.dumps(out.getvalue()), file=sys.__stdout__)
"""


def _cli(env: dict[str, str], *commands: tuple[list[str], str]) -> list[str]:
    """Run operator commands against the broker's database; their outputs."""
    result = subprocess.run(
        [sys.executable, "-c", CLI_SCRIPT, json.dumps(commands)], env=env, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """``switchboard serve`` on a free port with its own SQLite database: tenant ``partners``,
    users ana (verified email), ben (unverified email) and cy (none), the confidential client
    ``staff-portal`` whose redirect URI is this identity provider's callback."""
    workdir = tmp_path_factory.mktemp("broker")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    env.update(
        SWITCHBOARD_DATA_DIR=str(workdir), SWITCHBOARD_SECRET_KEY=TEST_SECRET + "-broker",
        SWITCHBOARD_PUBLIC_BASE_URL=base, SWITCHBOARD_ARGON2_TIME_COST="1",
        SWITCHBOARD_ARGON2_MEMORY_KIB="64", SWITCHBOARD_ARGON2_PARALLELISM="1",
    )  # fmt: skip
    commands: list[tuple[list[str], str]] = [
        (["migrate"], ""),
        (["tenant", "create", "partners", "--domain", f"127.0.0.1:{port}"], ""),
    ]
    for user, role, email, verified in (
        ("ana", "admin", "ana@partners.example", True),
        ("ben", "user", "ben@partners.example", False),
        ("cy", "user", None, False),
    ):
        create = ["user", "create", user, "--tenant", "partners", "--role", role]
        commands.append(([*create, "--password-stdin"], BROKER_PASSWORD + "\n"))
        if email:
            flags = ["--verified"] if verified else []
            set_email = ["user", "set-email", user, "--tenant", "partners", "--email", email]
            commands.append(([*set_email, *flags], ""))
    commands.append((
        ["client", "create", "staff-portal", "--tenant", "partners", "--confidential",
         "--redirect-uri", f"{BASE}/oidc.ashx/federation/partners/callback"], "",
    ))  # fmt: skip
    created = _cli(env, *commands)[-1]
    (workdir / "secrets").mkdir()
    secret_file = workdir / "secrets" / "client-secret"
    secret_file.write_text(created.strip().split("\t")[1] + "\n")
    running = Broker(f"{base}/oidc.ashx", "staff-portal", secret_file, env, port, _serve(env, port))
    try:
        yield running
    finally:
        running.process.terminate()
        running.process.wait(timeout=15)


@pytest.fixture
def settings(settings: Settings, broker: Broker) -> Settings:
    """The broker runs on loopback; its client secret is a file where the operator keeps them."""
    return settings.model_copy(
        update={
            "federation_allow_private": ("127.0.0.0/8",),
            "federation_secrets_dir": broker.secret_file.parent,
        }
    )


async def add_provider(runtime: Runtime, broker: Broker, **options: object) -> None:
    spec = federation.ProviderSpec(
        name="partners", display_name="Partners", issuer=broker.issuer,
        client_id=broker.client_id, secret=SecretReference(f"file:{broker.secret_file}"),
        **options,  # type: ignore[arg-type]
    )  # fmt: skip
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        await federation.add_provider(
            session, tenant=tenant, spec=spec, client_secrets=ClientSecrets.of(runtime),
            now=runtime.clock.now(), operator=True,
        )  # fmt: skip


def with_query(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()} | changes
    return urlunsplit(parts._replace(query=urlencode(query)))


async def to_broker(browser: AsyncClient) -> Response:
    """Open the login page and choose the provider: the redirect to the broker."""
    page = await browser.get(authorize_url())
    assert page.status_code == 200, page.text
    link = provider_link(page, "Sign in with Partners")
    assert link is not None, page.text
    started = await browser.get(link)
    assert started.status_code == 302, started.text
    return started


async def broker_sign_in(browser: AsyncClient, broker_url: str, username: str) -> str:
    """Sign in on the broker's own login page; the URL it sends the browser back to."""
    page = await browser.get(broker_url)
    assert page.status_code == 200, page.text
    form = parse_form(page)
    answer = await browser.post(
        form.url, data={**form.fields, "username": username, "password": BROKER_PASSWORD}
    )
    assert answer.status_code == 303, answer.text
    return answer.headers["location"]


async def console_tokens(browser: AsyncClient, callback: Response) -> dict[str, object]:
    params = query_of(callback)
    assert params["state"] == "console-state"
    assert callback.headers["location"].startswith(CONSOLE_CALLBACK + "?")
    answer = await browser.post(
        f"{BASE}/oidc.ashx/token",
        data={
            "grant_type": "authorization_code", "client_id": "console", "code": params["code"],
            "redirect_uri": CONSOLE_CALLBACK, "code_verifier": VERIFIER,
        },
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    body: dict[str, object] = answer.json()
    return body


async def local_claims(browser: AsyncClient, token: str) -> dict[str, object]:
    keys = KeySet.import_key_set((await browser.get(f"{BASE}/oidc.ashx/jwks")).json())
    return dict(jwt.decode(token, keys, algorithms=["RS256"]).claims)


async def test_first_sign_in_creates_the_user_and_later_ones_find_it(
    broker: Broker, runtime: Runtime, browser: AsyncClient
) -> None:
    await add_provider(runtime, broker, first_login="create", role_claim="role",
                       allowed_domains=("partners.example",))  # fmt: skip
    started = await to_broker(browser)
    sent = query_of(started)
    assert started.headers["location"].startswith(f"{broker.issuer}/authorize?")
    assert sent["client_id"] == "staff-portal"
    assert sent["code_challenge_method"] == "S256"
    assert sent["scope"] == "openid email profile"
    assert sent["redirect_uri"] == f"{BASE}/oidc.ashx/federation/partners/callback"
    back = await broker_sign_in(browser, started.headers["location"], "ana")
    callback = await browser.get(back)
    tokens = await console_tokens(browser, callback)
    assert "sb_idp_session" in callback.headers.get("set-cookie", "")
    claims = await local_claims(browser, str(tokens["access_token"]))
    assert claims["iss"] == f"{BASE}/oidc.ashx"  # this identity provider's own token
    assert claims["preferred_username"] == "ana"
    assert claims["role"] == "admin"  # from the broker's mapped claim
    assert claims["tenant"] == "acme"
    # The ID token names the provider session the federated sign-in started (decision 0605).
    assert isinstance((await local_claims(browser, str(tokens["id_token"])))["sid"], str)
    # The platform API accepts it as any of its own tokens.
    calls = await browser.get(
        f"{BASE}/api.ashx/v1/calls", headers={"Authorization": f"Bearer {tokens['access_token']}"}
    )
    assert calls.status_code == 200, calls.text

    # Signed out here (the broker's session lives on): the next sign-in finds the linked user.
    for cookie in list(browser.cookies.jar):
        if cookie.domain.startswith(PRIMARY_HOST):
            browser.cookies.delete(cookie.name, domain=cookie.domain, path=cookie.path)
    started = await to_broker(browser)
    # the broker's session is still there: it sends the browser back at once
    returned = await browser.get(started.headers["location"])
    assert returned.status_code == 302, returned.text
    tokens = await console_tokens(browser, await browser.get(returned.headers["location"]))
    again = await local_claims(browser, str(tokens["access_token"]))
    assert again["sub"] == claims["sub"]


async def test_link_by_verified_email(
    broker: Broker, runtime: Runtime, browser: AsyncClient
) -> None:
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        await identity.set_email(session, tenant_id=tenant.id, username="user",
                                 email="ana@partners.example", verified=True)  # fmt: skip
    await add_provider(runtime, broker, first_login="link-by-verified-email")
    started = await to_broker(browser)
    back = await broker_sign_in(browser, started.headers["location"], "ana")
    tokens = await console_tokens(browser, await browser.get(back))
    claims = await local_claims(browser, str(tokens["access_token"]))
    assert claims["preferred_username"] == "user"
    assert claims["role"] == "user"  # no role claim mapped: the local role stays


async def refused(browser: AsyncClient, response: Response, status: int, text: str) -> None:
    assert response.status_code == status, response.text
    assert text in response.text
    assert "sb_idp_session" not in response.headers.get("set-cookie", "")


async def test_an_unverified_email_links_nobody(
    broker: Broker, runtime: Runtime, browser: AsyncClient
) -> None:
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        await identity.set_email(session, tenant_id=tenant.id, username="user",
                                 email="ben@partners.example", verified=True)  # fmt: skip
    await add_provider(runtime, broker, first_login="link-by-verified-email")
    started = await to_broker(browser)
    back = await broker_sign_in(browser, started.headers["location"], "ben")
    page = await browser.get(back)
    await refused(browser, page, 403, "no verified email address")
    assert "Sign in with Partners" in page.text  # the login page again, with the reason


async def test_the_refuse_policy(broker: Broker, runtime: Runtime, browser: AsyncClient) -> None:
    await add_provider(runtime, broker)  # first_login=refuse by default
    started = await to_broker(browser)
    back = await broker_sign_in(browser, started.headers["location"], "cy")
    await refused(browser, await browser.get(back), 403, "no account here is linked")


async def test_an_email_outside_the_allowed_domains_is_refused(
    broker: Broker, runtime: Runtime, browser: AsyncClient
) -> None:
    await add_provider(runtime, broker, first_login="create", allowed_domains=("acme.example",))
    started = await to_broker(browser)
    back = await broker_sign_in(browser, started.headers["location"], "ana")
    await refused(browser, await browser.get(back), 403, "not of an allowed domain")


async def test_a_bad_or_replayed_state_and_another_browser_are_refused(
    broker: Broker, runtime: Runtime, browser: AsyncClient, app: Starlette
) -> None:
    await add_provider(runtime, broker, first_login="create")
    started = await to_broker(browser)
    back = await broker_sign_in(browser, started.headers["location"], "ana")
    await refused(browser, await browser.get(with_query(back, state="forged")), 400, "unknown")
    # The same answer in another browser (no binding cookie) is refused and burns the state.
    mounts = {f"all://{PRIMARY_HOST}": ASGITransport(app=app)}
    async with AsyncClient(mounts=mounts, timeout=30) as other:
        await refused(other, await other.get(back), 400, "another browser")
    await refused(browser, await browser.get(back), 400, "used or expired")


async def test_a_wrong_nonce_is_refused(
    broker: Broker, runtime: Runtime, browser: AsyncClient
) -> None:
    await add_provider(runtime, broker, first_login="create")
    started = await to_broker(browser)
    tampered = with_query(started.headers["location"], nonce="a-nonce-we-never-sent")
    back = await broker_sign_in(browser, tampered, "ana")
    await refused(browser, await browser.get(back), 403, "nonce")


async def test_an_answer_from_another_issuer_is_refused(
    broker: Broker, runtime: Runtime, browser: AsyncClient
) -> None:
    await add_provider(runtime, broker, first_login="create")
    started = await to_broker(browser)
    back = await broker_sign_in(browser, started.headers["location"], "ana")
    mixed_up = with_query(back, iss="https://login.elsewhere.example/oidc")
    await refused(browser, await browser.get(mixed_up), 400, "unknown issuer")


async def test_a_disabled_provider_is_not_offered_and_refuses_sign_ins_under_way(
    broker: Broker, runtime: Runtime, browser: AsyncClient
) -> None:
    await add_provider(runtime, broker, first_login="create")
    started = await to_broker(browser)
    back = await broker_sign_in(browser, started.headers["location"], "ana")
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        await federation.set_enabled(session, tenant=tenant, name="partners", enabled=False)
    await refused(browser, await browser.get(back), 404, "not offered")
    page = await browser.get(authorize_url())
    assert provider_link(page, "Sign in with Partners") is None
    start = f"{BASE}/oidc.ashx/federation/partners/start?{urlsplit(authorize_url()).query}"
    await refused(browser, await browser.get(start), 404, "not offered")


def sign_out_here(browser: AsyncClient) -> None:
    """Forget this identity provider's cookies (the broker's session lives on)."""
    for cookie in list(browser.cookies.jar):
        if cookie.domain.startswith(PRIMARY_HOST):
            browser.cookies.delete(cookie.name, domain=cookie.domain, path=cookie.path)


async def test_discovery_and_keys_are_cached_and_a_rotated_key_is_fetched(
    broker: Broker, runtime: Runtime, browser: AsyncClient, clock: ManualClock
) -> None:
    fetched: list[str] = []

    async def counting(oauth: Any, url: str) -> dict[str, Any]:
        fetched.append(urlsplit(url).path)
        return await fetch_json(oauth, url)

    providers.replace(
        runtime, ProviderCache(ttl=120, fetch=counting, allow=providers(runtime).allow)
    )
    await add_provider(runtime, broker, first_login="create")
    discovery, keys = "/oidc.ashx/.well-known/openid-configuration", "/oidc.ashx/jwks"

    async def sign_in() -> None:
        sign_out_here(browser)
        started = await to_broker(browser)
        at_broker = await browser.get(started.headers["location"])
        if at_broker.status_code == 200:  # the broker's login page: no session there yet
            back = await broker_sign_in(browser, started.headers["location"], "ana")
        else:
            back = at_broker.headers["location"]
        tokens = await console_tokens(browser, await browser.get(back))
        assert (await local_claims(browser, str(tokens["access_token"])))[
            "preferred_username"
        ] == "ana"

    await sign_in()
    assert fetched == [discovery, keys]
    await sign_in()  # start and callback both use the kept documents
    assert fetched == [discovery, keys]
    # The broker rotates its signing key: the next ID token names a kid the kept JWKS lacks.
    _cli(broker.env, (["keys", "rotate"], ""))
    broker.restart()
    clock.advance(REFETCH_GAP_SECONDS)
    await sign_in()
    assert fetched == [discovery, keys, keys]
    # Past the cache's lifetime both documents are fetched again.
    clock.advance(120)
    await sign_in()
    assert fetched == [discovery, keys, keys, discovery, keys]
