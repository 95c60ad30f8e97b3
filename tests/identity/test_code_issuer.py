"""An authorization code is redeemed only at the issuer its authorization response named (RFC 9207,
decision 0035): a tenant served under two hosts, over HTTP, on both databases."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import urlencode

import pytest
from httpx import ASGITransport, AsyncClient, Response
from joserfc import jwt
from joserfc.jwk import KeySet

from switchboard.app import create_app
from switchboard.identity import clients
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from tests import factories
from tests.identity.signin_helpers import redirect_params, sign_in
from tests.identity.test_signin_errors import VERIFIER, challenge

HOST_A, HOST_B = "a.multi.test", "b.multi.test"
REDIRECT_URI = "https://app.example/cb"


@pytest.fixture
async def browser(runtime: Runtime) -> AsyncIterator[AsyncClient]:
    await factories.tenant(runtime, "multi", [HOST_A, HOST_B])
    async with runtime.db.transaction() as session:
        tenant = await tenants.require_by_name(session, "multi")
        await clients.create_client(
            session, tenant=tenant, client_id="app", clock=runtime.clock,
            redirect_uris=[REDIRECT_URI],
        )  # fmt: skip
    async with runtime.lifespan():
        transport = ASGITransport(app=create_app(runtime=runtime))
        async with AsyncClient(transport=transport) as client:
            yield client


async def code_from(browser: AsyncClient, host: str) -> dict[str, str]:
    query = urlencode({
        "response_type": "code", "client_id": "app", "redirect_uri": REDIRECT_URI,
        "scope": "openid", "code_challenge": challenge(VERIFIER), "code_challenge_method": "S256",
    })  # fmt: skip
    return redirect_params(await sign_in(browser, f"http://{host}/oidc.ashx/authorize?{query}"))


async def redeem(browser: AsyncClient, host: str, code: str) -> Response:
    return await browser.post(
        f"http://{host}/oidc.ashx/token",
        data={"grant_type": "authorization_code", "client_id": "app", "code": code,
              "redirect_uri": REDIRECT_URI, "code_verifier": VERIFIER},
    )  # fmt: skip


async def test_a_code_is_redeemed_at_its_issuer_only(browser: AsyncClient) -> None:
    issued = await code_from(browser, HOST_A)
    assert issued["iss"] == f"http://{HOST_A}/oidc.ashx"
    elsewhere = await redeem(browser, HOST_B, issued["code"])
    assert elsewhere.status_code == 400
    assert elsewhere.json()["error"] == "invalid_grant"
    assert "another issuer" in elsewhere.json()["error_description"]
    # The attempt used the code up: its own issuer refuses it now too.
    again = await redeem(browser, HOST_A, issued["code"])
    assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")
    assert "already used" in again.json()["error_description"]
    # A fresh code from A is good at A, and its ID token names A.
    fresh = await code_from(browser, HOST_A)
    tokens = await redeem(browser, HOST_A, fresh["code"])
    assert tokens.status_code == 200, tokens.text
    keys = KeySet.import_key_set((await browser.get(f"http://{HOST_A}/oidc.ashx/jwks")).json())
    claims = jwt.decode(tokens.json()["id_token"], keys, algorithms=["RS256"]).claims
    assert claims["iss"] == issued["iss"]
    # ... and so is B's at B.
    from_b = await code_from(browser, HOST_B)
    assert from_b["iss"] == f"http://{HOST_B}/oidc.ashx"
    assert (await redeem(browser, HOST_B, from_b["code"])).status_code == 200
