"""Signing in with the EU Digital Identity Wallet: a software wallet (issuer key, holder key, a
PID issued and presented with the ``sd-jwt`` library) answers the identity provider's OpenID4VP
request over HTTP while the browser waits on the page, as a wallet and a browser would."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
from httpx import ASGITransport, AsyncClient, Response
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet
from jwcrypto.jwk import JWK
from starlette.applications import Starlette

from switchboard.app import create_app
from switchboard.identity import clients
from switchboard.identity.wallet import service as wallet
from switchboard.identity.wallet import tasks
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from tests.factories import TenantFixture
from tests.identity.signin_helpers import parse_form
from tests.identity.software_wallet import (
    BASE,
    CLAIM,
    REDIRECT_URI,
    SoftwareWallet,
    authorize_url,
    links,
)


@pytest.fixture
async def app(
    runtime: Runtime, acme: TenantFixture, clock: ManualClock
) -> AsyncIterator[Starlette]:
    # The library stamps the key binding JWT with the real time: the clock starts there.
    clock.set(dt.datetime.now(dt.UTC).replace(microsecond=0))
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        await clients.ensure_console_client(
            session, tenant=tenant, base_url=BASE, clock=runtime.clock
        )
    application = create_app(runtime=runtime)
    async with runtime.lifespan():
        yield application


@pytest.fixture
async def browser(app: Starlette) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(transport=ASGITransport(app=app), base_url=BASE) as client:
        yield client


@pytest.fixture
async def holder(runtime: Runtime, app: Starlette, clock: ManualClock) -> SoftwareWallet:
    issuer_key = JWK.generate(kty="EC", crv="P-256", kid="pid-issuer-1")
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "acme")
        await wallet.add_issuer(
            session, tenant=tenant, name="pid", jwk=issuer_key.export_public(),
            username_claim=CLAIM, now=clock.now(),
        )  # fmt: skip
    holder_key = JWK.generate(kty="EC", crv="P-256")
    return SoftwareWallet(issuer_key, holder_key, int(clock.now().timestamp()))


@dataclass
class Started:
    page: Response
    status_url: str
    request: dict[str, Any]


async def start(browser: AsyncClient) -> Started:
    """The browser chooses the wallet on the login page; the wallet scans the link."""
    login = await browser.get(authorize_url())
    assert login.status_code == 200
    [start_url] = [u for u in links(login) if "/wallet/start?" in u]
    page = await browser.get(start_url)
    assert page.status_code == 200, page.text
    assert "<svg" in page.text  # the QR code, rendered on the server
    [link] = [u for u in links(page) if u.startswith("openid4vp://")]
    params = {k: v[0] for k, v in parse_qs(urlsplit(link).query).items()}
    fetched = await browser.get(params["request_uri"])
    assert fetched.status_code == 200
    assert fetched.headers["content-type"] == "application/oauth-authz-req+jwt"
    keys = KeySet.import_key_set((await browser.get("/oidc.ashx/jwks")).json())
    token = jwt.decode(fetched.text, keys, algorithms=["RS256"])
    assert token.header["typ"] == "oauth-authz-req+jwt"
    request = dict(token.claims)
    assert request["client_id"] == params["client_id"]
    assert request["response_mode"] == "direct_post"
    assert request["dcql_query"]["credentials"][0]["meta"] == {"vct_values": ["urn:eudi:pid:1"]}
    assert request["dcql_query"]["credentials"][0]["claims"] == [{"path": [CLAIM]}]
    assert request["exp"] - request["iat"] == 300
    refresh = [line for line in page.text.splitlines() if 'http-equiv="refresh"' in line]
    assert refresh, page.text
    status_url = urljoin(str(page.url), f"status?state={request['state']}")
    return Started(page, status_url, request)


async def answer(browser: AsyncClient, started: Started, presentation: str) -> Response:
    request = started.request
    form = {"vp_token": json.dumps({"pid": [presentation]}), "state": request["state"]}
    return await browser.post(request["response_uri"], data=form)


async def test_wallet_signs_in(browser: AsyncClient, holder: SoftwareWallet) -> None:
    started = await start(browser)
    waiting = await browser.get(started.status_url)
    assert waiting.status_code == 200
    assert "<svg" in waiting.text
    request = started.request
    presentation = holder.present(
        holder.issue(), nonce=request["nonce"], aud=request["client_id"],
        holder_key=holder.holder_key,
    )  # fmt: skip
    posted = await answer(browser, started, presentation)
    assert posted.status_code == 200, posted.text
    assert posted.json() == {}
    done = await browser.get(started.status_url)
    assert done.status_code == 302, done.text
    location = urlsplit(done.headers["location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT_URI
    params = parse_qs(location.query)
    assert params["state"] == ["st-1"]
    assert params["code"]
    # The browser is signed in at the identity provider: the next request answers at once.
    again = await browser.get(authorize_url())
    assert again.status_code == 302
    # The page is done with.
    assert (await browser.get(started.status_url)).status_code == 400


async def test_replayed_response_is_refused(browser: AsyncClient, holder: SoftwareWallet) -> None:
    started = await start(browser)
    request = started.request
    presentation = holder.present(
        holder.issue(), nonce=request["nonce"], aud=request["client_id"],
        holder_key=holder.holder_key,
    )  # fmt: skip
    assert (await answer(browser, started, presentation)).status_code == 200
    # The same response again, to the same request: it is answered already.
    replay = await answer(browser, started, presentation)
    assert replay.status_code == 400
    assert "answered already" in replay.json()["error_description"]
    # The same response to a newer request: bound to the other request's nonce.
    later = await start(browser)
    replay = await answer(browser, later, presentation)
    assert replay.status_code == 400
    assert "Invalid nonce" in replay.json()["error_description"]
    refused = await browser.get(later.status_url)
    assert refused.status_code == 403
    assert "could not be verified" in refused.text


async def _refused(
    browser: AsyncClient, started: Started, presentation: str, *, reason: str
) -> None:
    posted = await answer(browser, started, presentation)
    assert posted.status_code == 400, posted.text
    assert posted.json()["error"] == "invalid_request"
    assert reason in posted.json()["error_description"]
    page = await browser.get(started.status_url)
    assert page.status_code == 403
    assert "could not be verified" in page.text


async def test_wrong_nonce_is_refused(browser: AsyncClient, holder: SoftwareWallet) -> None:
    started = await start(browser)
    aud = started.request["client_id"]
    bad = holder.present(holder.issue(), nonce="another", aud=aud, holder_key=holder.holder_key)
    await _refused(browser, started, bad, reason="Invalid nonce")


async def test_wrong_audience_is_refused(browser: AsyncClient, holder: SoftwareWallet) -> None:
    started = await start(browser)
    nonce = started.request["nonce"]
    bad = holder.present(
        holder.issue(), nonce=nonce, aud="other.example", holder_key=holder.holder_key
    )
    await _refused(browser, started, bad, reason="Invalid audience")


async def test_tampered_disclosure_is_refused(browser: AsyncClient, holder: SoftwareWallet) -> None:
    started = await start(browser)
    request = started.request
    presented = holder.present(
        holder.issue(username="someone-else"), nonce=request["nonce"], aud=request["client_id"],
        holder_key=holder.holder_key,
    )  # fmt: skip
    # The holder swaps the disclosure for one naming another user and binds the result anew.
    issued_jwt, _disclosure, _kb = presented.split("~")
    forged = base64.urlsafe_b64encode(json.dumps(["c2FsdA", CLAIM, "admin"]).encode())
    tampered = f"{issued_jwt}~{forged.rstrip(b'=').decode()}~"
    sd_hash = base64.urlsafe_b64encode(hashlib.sha256(tampered.encode()).digest())
    claims = {
        "nonce": request["nonce"], "aud": request["client_id"], "iat": holder.now,
        "sd_hash": sd_hash.rstrip(b"=").decode(),
    }  # fmt: skip
    key = ECKey.import_key(holder.holder_key.export_private(as_dict=True))
    kb = jwt.encode({"alg": "ES256", "typ": "kb+jwt"}, claims, key, algorithms=["ES256"])
    await _refused(
        browser, started, tampered + kb, reason="a disclosure is not part of the credential"
    )


async def test_untrusted_issuer_is_refused(browser: AsyncClient, holder: SoftwareWallet) -> None:
    started = await start(browser)
    # Another key claiming the trusted key's id.
    stranger = SoftwareWallet(
        JWK.generate(kty="EC", crv="P-256", kid="pid-issuer-1"), holder.holder_key, holder.now
    )
    bad = holder.present(
        stranger.issue(), nonce=started.request["nonce"], aud=started.request["client_id"],
        holder_key=holder.holder_key,
    )  # fmt: skip
    await _refused(browser, started, bad, reason="does not verify")


async def test_expired_credential_is_refused(browser: AsyncClient, holder: SoftwareWallet) -> None:
    started = await start(browser)
    bad = holder.present(
        holder.issue(expires_in=-60), nonce=started.request["nonce"],
        aud=started.request["client_id"], holder_key=holder.holder_key,
    )  # fmt: skip
    await _refused(browser, started, bad, reason="expired")


async def test_request_expires_after_five_minutes(
    browser: AsyncClient, holder: SoftwareWallet, clock: ManualClock
) -> None:
    started = await start(browser)
    clock.advance(301)
    fetched = await browser.get(started.request["response_uri"].replace("response", "request/x"))
    assert fetched.status_code == 400
    late = holder.present(
        holder.issue(), nonce=started.request["nonce"], aud=started.request["client_id"],
        holder_key=holder.holder_key,
    )  # fmt: skip
    assert (await answer(browser, started, late)).status_code == 400
    assert (await browser.get(started.status_url)).status_code == 400


async def test_unknown_user_is_refused(browser: AsyncClient, holder: SoftwareWallet) -> None:
    started = await start(browser)
    presentation = holder.present(
        holder.issue(username="nobody"), nonce=started.request["nonce"],
        aud=started.request["client_id"], holder_key=holder.holder_key,
    )  # fmt: skip
    assert (await answer(browser, started, presentation)).status_code == 200
    page = await browser.get(started.status_url)
    assert page.status_code == 403
    assert "no account here is linked" in page.text
    # The login page shown again works from there: its form posts to the authorization endpoint.
    assert urlsplit(parse_form(page).url).path == "/oidc.ashx/authorize"


async def test_login_page_offers_the_wallet_only_with_a_trusted_issuer(
    browser: AsyncClient,
) -> None:
    login = await browser.get(authorize_url())
    assert not [u for u in links(login) if "/wallet/start?" in u]


async def test_old_requests_are_purged(
    runtime: Runtime, browser: AsyncClient, holder: SoftwareWallet, clock: ManualClock
) -> None:
    first = await start(browser)
    clock.advance(301)
    second = await start(browser)
    clock.advance(300)
    async with runtime.db.transaction() as session:
        assert await tasks.purge(session, now=clock.now()) == 1
    fetched = await browser.get(urljoin(first.status_url, f"request/{first.request['state']}"))
    assert fetched.status_code == 400
    assert (await browser.get(second.status_url)).status_code == 400  # expired, not yet purged


async def test_another_tenants_host_neither_sees_nor_answers_a_request(
    app: Starlette, browser: AsyncClient, holder: SoftwareWallet, globex: TenantFixture
) -> None:
    """A request belongs to the Host's tenant: on globex's host acme's request is unknown, and
    globex, which trusts no issuer, offers no wallet."""
    started = await start(browser)
    request = started.request
    transport = ASGITransport(app=app)
    async with AsyncClient(transport=transport, base_url=f"http://{globex.host}") as other:
        fetched = await other.get(f"/oidc.ashx/wallet/request/{request['state']}")
        assert fetched.status_code in (400, 404)
        assert "oauth-authz-req+jwt" not in fetched.headers.get("content-type", "")
        presentation = holder.present(
            holder.issue(), nonce=request["nonce"], aud=request["client_id"],
            holder_key=holder.holder_key,
        )  # fmt: skip
        form = {"vp_token": json.dumps({"pid": [presentation]}), "state": request["state"]}
        posted = await other.post(urlsplit(request["response_uri"]).path, data=form)
        assert posted.status_code in (400, 404), posted.text
        status = urlsplit(started.status_url)
        assert (await other.get(f"{status.path}?{status.query}")).status_code in (400, 404)
        start_page = await other.get("/oidc.ashx/wallet/start")
        assert start_page.status_code in (400, 404)
    # acme's request is untouched: its wallet still signs in.
    assert (await answer(browser, started, presentation)).status_code == 200
    assert (await browser.get(started.status_url)).status_code == 302
