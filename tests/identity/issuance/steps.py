"""Steps of the credential issuer's tests: a signed-in browser makes an offer on its page."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

from httpx import ASGITransport, AsyncClient, Response
from joserfc import jwt
from joserfc.jwk import KeySet
from starlette.applications import Starlette

from tests.identity.signin_helpers import parse_form, sign_in
from tests.identity.software_wallet import BASE, links

TX_CODE = re.compile(r'<strong id="tx-code">(\d+)</strong>')


def client(app: Starlette, base: str = BASE) -> AsyncClient:
    return AsyncClient(transport=ASGITransport(app=app), base_url=base)


@dataclass
class Authorization:
    url: str
    verifier: str


def authorization(base: str = BASE) -> Authorization:
    """An authorization request of the console with a PKCE verifier the test keeps."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    query = {
        "response_type": "code", "client_id": "console", "redirect_uri": f"{base}/admin/callback",
        "scope": "openid", "state": "st-1", "code_challenge_method": "S256",
        "code_challenge": challenge.rstrip(b"=").decode(),
    }  # fmt: skip
    return Authorization(f"/oidc.ashx/authorize?{urlencode(query)}", verifier)


@dataclass
class OfferPage:
    link: str
    tx_code: str | None
    html: str


async def make_offer(
    browser: AsyncClient, *, username: str = "admin", tx_code: bool = True
) -> OfferPage:
    """Sign in (unless signed in already), open the offer page and make an offer."""
    signed = await sign_in(browser, authorization(str(browser.base_url)).url, username=username)
    assert signed.status_code in (302, 303), signed.text
    page = await browser.get("/oidc.ashx/credential-offer")
    assert page.status_code == 200, page.text
    form = parse_form(page)
    fields = {"csrf_token": form.fields["csrf_token"]}
    if tx_code:
        fields["tx_code"] = "on"
    made = await browser.post(form.url, data=fields)
    assert made.status_code == 200, made.text
    assert "<svg" in made.text  # the QR code, drawn on the server
    [link] = [u for u in links(made) if u.startswith("openid-credential-offer://")]
    found = TX_CODE.search(made.text)
    assert bool(found) == tx_code
    return OfferPage(link, found.group(1) if found else None, made.text)


@dataclass
class WalletSignIn:
    """A wallet sign-in started by a browser: its waiting page and the request object."""

    status_url: str
    request: dict[str, Any]


async def start_wallet_sign_in(browser: AsyncClient, device: AsyncClient, url: str) -> WalletSignIn:
    """The browser chooses the wallet on the login page of ``url``; the wallet fetches the
    signed request (checked against the identity provider's JWKS)."""
    login = await browser.get(url)
    [start_url] = [u for u in links(login) if "/wallet/start?" in u]
    page = await browser.get(start_url)
    assert page.status_code == 200, page.text
    [link] = [u for u in links(page) if u.startswith("openid4vp://")]
    request_uri = parse_qs(urlsplit(link).query)["request_uri"][0]
    keys = KeySet.import_key_set((await device.get("/oidc.ashx/jwks")).json())
    signed = (await device.get(request_uri)).text
    request = dict(jwt.decode(signed, keys, algorithms=["RS256"]).claims)
    return WalletSignIn(urljoin(str(page.url), f"status?state={request['state']}"), request)


async def answer(
    device: AsyncClient, started: WalletSignIn, credential_id: str, presentation: str
) -> Response:
    form = {
        "vp_token": json.dumps({credential_id: [presentation]}),
        "state": started.request["state"],
    }
    return await device.post(started.request["response_uri"], data=form)
