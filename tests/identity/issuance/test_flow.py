"""The credential issuer (OpenID4VCI 1.0): a signed-in user makes an offer on the identity
provider's page, the software wallet takes it over HTTP (metadata, pre-authorized code, c_nonce,
key proof) and receives a staff SD-JWT VC, which then signs that user in at the tenant's own
OpenID4VP verifier."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

from httpx import AsyncClient
from joserfc import jwt
from joserfc.jwk import KeySet
from starlette.applications import Starlette

from switchboard.identity import accounts
from switchboard.identity.issuance import tasks
from switchboard.identity.wallet import service as wallet
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from tests.factories import TenantFixture
from tests.identity.issuance.steps import (
    answer,
    authorization,
    client,
    make_offer,
    start_wallet_sign_in,
)
from tests.identity.software_wallet import BASE, CLAIM, SoftwareWallet, well_known

ISSUER = f"{BASE}/oidc.ashx"


def _b64json(part: str) -> Any:
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def disclosed(credential: str) -> dict[str, Any]:
    """The claims of an SD-JWT's disclosures, by name."""
    _jwt, *disclosures = credential.split("~")
    return {d[1]: d[2] for d in (_b64json(x) for x in disclosures if x)}


async def test_metadata_describes_the_staff_credential(device: AsyncClient) -> None:
    at_root = await device.get(well_known(ISSUER, "openid-credential-issuer"))
    under_mount = await device.get("/oidc.ashx/.well-known/openid-credential-issuer")
    assert at_root.status_code == under_mount.status_code == 200
    metadata = at_root.json()
    assert metadata == under_mount.json()
    assert metadata["credential_issuer"] == ISSUER
    assert metadata["credential_endpoint"] == f"{ISSUER}/credential"
    assert metadata["nonce_endpoint"] == f"{ISSUER}/nonce"
    staff = metadata["credential_configurations_supported"]["staff"]
    assert staff["format"] == "dc+sd-jwt"
    assert staff["vct"] == f"{ISSUER}/credentials/staff"
    assert staff["cryptographic_binding_methods_supported"] == ["jwk"]
    assert "ES256" in staff["proof_types_supported"]["jwt"]["proof_signing_alg_values_supported"]
    claims = [c["path"] for c in staff["credential_metadata"]["claims"]]
    assert claims == [["username"], ["role"], ["tenant"], ["email"]]
    server = (await device.get(well_known(ISSUER, "oauth-authorization-server"))).json()
    assert server["issuer"] == ISSUER
    assert server["pre-authorized_grant_anonymous_access_supported"] is True


async def test_wallet_receives_a_staff_credential_and_signs_in_with_it(
    app: Starlette, browser: AsyncClient, device: AsyncClient, holder: SoftwareWallet
) -> None:
    offer = await make_offer(browser, username="power")
    credential = await holder.receive(device, offer.link, tx_code=offer.tx_code)
    # An SD-JWT VC signed by the tenant's issuer key, bound to the holder key of the proof.
    issuer_jwt = credential.split("~")[0]
    keys = (await device.get(well_known(ISSUER, "jwt-vc-issuer"))).json()
    assert keys["issuer"] == ISSUER
    token = jwt.decode(issuer_jwt, KeySet.import_key_set(keys["jwks"]), algorithms=["ES256"])
    assert token.header["typ"] == "dc+sd-jwt"
    assert token.claims["iss"] == ISSUER
    assert token.claims["vct"] == f"{ISSUER}/credentials/staff"
    assert token.claims["cnf"]["jwk"] == holder.holder_key.export_public(as_dict=True)
    assert token.claims["exp"] > token.claims["iat"]
    assert "username" not in token.claims  # selectively disclosable, not in the clear
    assert disclosed(credential) == {"username": "power", "role": "power-user", "tenant": "acme"}

    # Another browser signs in with the wallet: the login page offers it now.
    async with client(app) as other:
        auth = authorization()
        started = await start_wallet_sign_in(other, device, auth.url)
        request = started.request
        [wanted] = request["dcql_query"]["credentials"]
        assert wanted["id"] == "staff"
        assert wanted["meta"] == {"vct_values": [f"{ISSUER}/credentials/staff"]}
        assert wanted["claims"] == [{"path": ["username"]}]
        assert "credential_sets" not in request["dcql_query"]
        presentation = holder.present(
            credential, nonce=request["nonce"], aud=request["client_id"],
            holder_key=holder.holder_key, claim="username",
        )  # fmt: skip
        posted = await answer(device, started, "staff", presentation)
        assert posted.status_code == 200, posted.text
        done = await other.get(started.status_url)
        assert done.status_code == 302, done.text
        code = parse_qs(urlsplit(done.headers["location"]).query)["code"][0]
        tokens = await other.post(
            "/oidc.ashx/token",
            data={
                "grant_type": "authorization_code", "client_id": "console", "code": code,
                "redirect_uri": f"{BASE}/admin/callback", "code_verifier": auth.verifier,
            },
        )  # fmt: skip
        assert tokens.status_code == 200, tokens.text
        headers = {"Authorization": f"Bearer {tokens.json()['access_token']}"}
        me = (await other.get("/oidc.ashx/userinfo", headers=headers)).json()
        assert me["preferred_username"] == "power"
        assert me["tenant"] == "acme"


async def test_a_disabled_user_gets_no_credential_and_its_credential_is_revoked(
    app: Starlette,
    runtime: Runtime,
    browser: AsyncClient,
    device: AsyncClient,
    holder: SoftwareWallet,
    acme: TenantFixture,
) -> None:
    first = await make_offer(browser, username="user")
    credential = await holder.receive(device, first.link, tx_code=first.tx_code)
    second = await make_offer(browser, username="user")
    issuance = await holder.discover(device, second.link)
    token = (await holder.redeem(device, issuance, tx_code=second.tx_code)).json()
    async with runtime.db.transaction() as session:
        await accounts.set_disabled(
            session, tenant_id=acme.id, username="user", disabled=True, clock=runtime.clock
        )
    proof = holder.proof(aud=ISSUER, nonce=await holder.nonce(device, issuance))
    refused = await holder.request_credential(
        device, issuance, token=token["access_token"], proof=proof
    )
    assert refused.status_code == 400
    assert refused.json()["error"] == "credential_request_denied"
    async with client(app) as other:
        started = await start_wallet_sign_in(other, device, authorization().url)
        presentation = holder.present(
            credential, nonce=started.request["nonce"], aud=started.request["client_id"],
            holder_key=holder.holder_key, claim="username",
        )  # fmt: skip
        # Disabling the user revoked its credential: the status list refuses it.
        answered = await answer(device, started, "staff", presentation)
        assert answered.status_code == 400
        assert "revoked" in answered.json()["error_description"]
        page = await other.get(started.status_url)
        assert page.status_code == 403
        assert "could not be verified" in page.text


async def test_a_pid_or_a_staff_credential_is_asked_for_when_both_are_trusted(
    app: Starlette,
    runtime: Runtime,
    browser: AsyncClient,
    device: AsyncClient,
    holder: SoftwareWallet,
    clock: ManualClock,
) -> None:
    async with runtime.db.transaction() as session:
        await wallet.add_issuer(
            session, tenant=await tenants.require_by_name(session, "acme"), name="pid",
            jwk=holder.issuer_key.export_public(), username_claim=CLAIM, now=clock.now(),
        )  # fmt: skip
    offer = await make_offer(browser)
    await holder.receive(device, offer.link, tx_code=offer.tx_code)
    async with client(app) as other:
        started = await start_wallet_sign_in(other, device, authorization().url)
        query = started.request["dcql_query"]
        assert [c["id"] for c in query["credentials"]] == ["pid", "staff"]
        assert query["credential_sets"] == [{"options": [["pid"], ["staff"]]}]
        presentation = holder.present(
            holder.issue(username="admin"), nonce=started.request["nonce"],
            aud=started.request["client_id"], holder_key=holder.holder_key,
        )  # fmt: skip
        assert (await answer(device, started, "pid", presentation)).status_code == 200
        assert (await other.get(started.status_url)).status_code == 302


async def test_offer_without_tx_code(
    browser: AsyncClient, device: AsyncClient, holder: SoftwareWallet
) -> None:
    offer = await make_offer(browser, tx_code=False)
    credential = await holder.receive(device, offer.link)
    assert disclosed(credential)["username"] == "admin"


async def test_the_offer_page_needs_a_signed_in_browser(browser: AsyncClient) -> None:
    page = await browser.get("/oidc.ashx/credential-offer")
    assert page.status_code == 401
    assert "Sign in first" in page.text
    made = await browser.post("/oidc.ashx/credential-offer", data={"csrf_token": "x" * 32})
    assert made.status_code == 401


async def test_another_tenants_session_makes_no_offer(
    app: Starlette, browser: AsyncClient, globex: TenantFixture
) -> None:
    await make_offer(browser)
    session = browser.cookies["sb_idp_session"]
    async with client(app, f"http://{globex.host}") as other:
        other.cookies.set("sb_idp_session", session, domain=globex.host)
        other.cookies.set("sb_idp_csrf", "x" * 32, domain=globex.host)
        page = await other.get("/oidc.ashx/credential-offer")
        assert page.status_code == 401
        made = await other.post("/oidc.ashx/credential-offer", data={"csrf_token": "x" * 32})
        assert made.status_code == 401
        assert "openid-credential-offer://" not in made.text
    # The same cookie on its own tenant's host is signed in: the test can fail.
    assert (await browser.get("/oidc.ashx/credential-offer")).status_code == 200


async def test_offer_form_checks_csrf(browser: AsyncClient) -> None:
    await make_offer(browser)
    made = await browser.post("/oidc.ashx/credential-offer", data={"csrf_token": "x" * 32})
    assert made.status_code == 400
    assert "openid-credential-offer://" not in made.text


async def test_old_offers_and_nonces_are_purged(
    runtime: Runtime,
    browser: AsyncClient,
    device: AsyncClient,
    holder: SoftwareWallet,
    clock: ManualClock,
) -> None:
    offer = await make_offer(browser)
    issuance = await holder.discover(device, offer.link)
    await holder.nonce(device, issuance)
    clock.advance(301)
    async with runtime.db.transaction() as session:
        assert await tasks.purge(session, now=clock.now()) == (0, 1)  # the nonce only
    clock.advance(24 * 3600 + 600)
    async with runtime.db.transaction() as session:
        assert await tasks.purge(session, now=clock.now()) == (1, 0)
    redeemed = await holder.redeem(device, issuance, tx_code=offer.tx_code)
    assert redeemed.status_code == 400
    assert redeemed.json()["error"] == "invalid_grant"


async def test_another_tenants_credential_does_not_sign_in(
    app: Starlette,
    browser: AsyncClient,
    device: AsyncClient,
    holder: SoftwareWallet,
    globex: TenantFixture,
) -> None:
    """globex's admin takes a staff credential from globex; acme (which issues credentials of
    its own, so its verifier runs) refuses it although acme has an admin of the same name."""
    acme_offer = await make_offer(browser)
    await holder.receive(device, acme_offer.link, tx_code=acme_offer.tx_code)  # acme issues too
    async with client(app, f"http://{globex.host}") as globex_browser:
        offer = await make_offer(globex_browser)
    async with client(app, f"http://{globex.host}") as globex_device:
        credential = await holder.receive(globex_device, offer.link, tx_code=offer.tx_code)
    assert _b64json(credential.split(".")[1])["iss"] == f"http://{globex.host}/oidc.ashx"
    async with client(app) as other:
        started = await start_wallet_sign_in(other, device, authorization().url)
        request = started.request
        presentation = holder.present(
            credential, nonce=request["nonce"], aud=request["client_id"],
            holder_key=holder.holder_key, claim="username",
        )  # fmt: skip
        posted = await answer(device, started, "staff", presentation)
        assert posted.status_code == 400
        assert "not signed by a trusted issuer" in posted.json()["error_description"]
        refused = await other.get(started.status_url)
        assert refused.status_code == 403
