"""What the credential issuer refuses: key proofs without or with a wrong nonce, a wrong
audience or typ, a stale iat, another key's signature; a pre-authorized code used twice, a wrong
or missing transaction code, an expired offer; an access token used up, expired or foreign."""

from __future__ import annotations

import pytest
from httpx import AsyncClient, Response
from jwcrypto.jwk import JWK

from switchboard.kit.clock import ManualClock
from tests.factories import TenantFixture
from tests.identity.issuance.steps import client, make_offer
from tests.identity.software_wallet import Issuance, SoftwareWallet

ISSUER = "http://acme.test/oidc.ashx"


async def _ready(
    browser: AsyncClient, device: AsyncClient, holder: SoftwareWallet
) -> tuple[Issuance, str]:
    """An offer taken as far as the access token."""
    offer = await make_offer(browser)
    issuance = await holder.discover(device, offer.link)
    token = await holder.redeem(device, issuance, tx_code=offer.tx_code)
    assert token.status_code == 200, token.text
    body = token.json()
    assert body["token_type"] == "Bearer"
    assert token.headers["cache-control"] == "no-store"
    return issuance, str(body["access_token"])


def _refused(response: Response, error: str, status: int = 400) -> str:
    assert response.status_code == status, response.text
    assert response.json()["error"] == error, response.text
    return str(response.json()["error_description"])


@pytest.mark.parametrize(
    ("change", "error", "reason"),
    [
        ({"nonce": None}, "invalid_proof", "no nonce"),
        ({"nonce": "not-a-c-nonce"}, "invalid_nonce", "c_nonce"),
        ({"aud": "http://globex.test/oidc.ashx"}, "invalid_proof", "aud"),
        ({"typ": "JWT"}, "invalid_proof", "typ"),
        ({"iat": -301}, "invalid_proof", "not fresh"),
        ({"iat": 3600}, "invalid_proof", "not fresh"),
    ],
)
async def test_bad_key_proofs_are_refused(
    browser: AsyncClient,
    device: AsyncClient,
    holder: SoftwareWallet,
    change: dict[str, object],
    error: str,
    reason: str,
) -> None:
    issuance, token = await _ready(browser, device, holder)
    nonce = await holder.nonce(device, issuance)
    fields: dict[str, object] = {"aud": ISSUER, "nonce": nonce, **change}
    iat = holder.now + int(str(fields.pop("iat"))) if "iat" in fields else None
    proof = holder.proof(
        aud=str(fields["aud"]), nonce=None if fields["nonce"] is None else str(fields["nonce"]),
        typ=str(fields.get("typ", "openid4vci-proof+jwt")), iat=iat,
    )  # fmt: skip
    answer = await holder.request_credential(device, issuance, token=token, proof=proof)
    assert reason in _refused(answer, error)
    # Nothing was spent: a good proof with the same token (and the same c_nonce) is served.
    good = holder.proof(aud=ISSUER, nonce=nonce)
    served = await holder.request_credential(device, issuance, token=token, proof=good)
    assert served.status_code == 200, served.text


async def test_a_proof_signed_by_another_key_is_refused(
    browser: AsyncClient, device: AsyncClient, holder: SoftwareWallet
) -> None:
    issuance, token = await _ready(browser, device, holder)
    nonce = await holder.nonce(device, issuance)
    proof = holder.proof(aud=ISSUER, nonce=nonce)
    header, payload, _signature = proof.split(".")
    other = SoftwareWallet(holder.issuer_key, JWK.generate(kty="EC", crv="P-256"), holder.now)
    forged = ".".join([header, payload, other.proof(aud=ISSUER, nonce=nonce).split(".")[2]])
    answer = await holder.request_credential(device, issuance, token=token, proof=forged)
    assert "signature" in _refused(answer, "invalid_proof")


async def test_a_c_nonce_serves_once(
    browser: AsyncClient, device: AsyncClient, holder: SoftwareWallet
) -> None:
    issuance, token = await _ready(browser, device, holder)
    nonce = await holder.nonce(device, issuance)
    proof = holder.proof(aud=ISSUER, nonce=nonce)
    assert (await holder.request_credential(device, issuance, token=token, proof=proof)).is_success
    second, token = await _ready(browser, device, holder)
    again = await holder.request_credential(device, second, token=token, proof=proof)
    _refused(again, "invalid_nonce")


async def test_an_access_token_serves_one_credential(
    browser: AsyncClient, device: AsyncClient, holder: SoftwareWallet
) -> None:
    issuance, token = await _ready(browser, device, holder)
    for expected in (200, 401):
        proof = holder.proof(aud=ISSUER, nonce=await holder.nonce(device, issuance))
        answer = await holder.request_credential(device, issuance, token=token, proof=proof)
        assert answer.status_code == expected, answer.text
    assert answer.headers["www-authenticate"].startswith("Bearer")
    _refused(answer, "invalid_token", status=401)


async def test_a_pre_authorized_code_serves_once(
    browser: AsyncClient, device: AsyncClient, holder: SoftwareWallet
) -> None:
    offer = await make_offer(browser)
    issuance = await holder.discover(device, offer.link)
    first = await holder.redeem(device, issuance, tx_code=offer.tx_code)
    assert first.status_code == 200
    second = await holder.redeem(device, issuance, tx_code=offer.tx_code)
    assert "already used" in _refused(second, "invalid_grant")
    # The replay revoked the token the first use issued.
    proof = holder.proof(aud=ISSUER, nonce=await holder.nonce(device, issuance))
    token = first.json()["access_token"]
    answer = await holder.request_credential(device, issuance, token=token, proof=proof)
    _refused(answer, "invalid_token", status=401)


async def test_transaction_code_is_checked(
    browser: AsyncClient, device: AsyncClient, holder: SoftwareWallet
) -> None:
    offer = await make_offer(browser)
    assert offer.tx_code is not None
    assert len(offer.tx_code) == 6
    issuance = await holder.discover(device, offer.link)
    assert issuance.offer["grants"][
        "urn:ietf:params:oauth:grant-type:pre-authorized_code"
    ]["tx_code"] == {
        "input_mode": "numeric", "length": 6,
        "description": "The code shown beside the QR code on the page that offered this.",
    }  # fmt: skip
    _refused(await holder.redeem(device, issuance), "invalid_request")
    wrong = str((int(offer.tx_code) + 1) % 1_000_000).zfill(6)
    assert "wrong tx_code" in _refused(
        await holder.redeem(device, issuance, tx_code=wrong), "invalid_grant"
    )
    # A mistyped code may be typed again (three attempts in all).
    assert (await holder.redeem(device, issuance, tx_code=offer.tx_code)).status_code == 200


async def test_three_wrong_transaction_codes_spend_the_offer(
    browser: AsyncClient, device: AsyncClient, holder: SoftwareWallet
) -> None:
    offer = await make_offer(browser)
    assert offer.tx_code is not None
    issuance = await holder.discover(device, offer.link)
    wrong = str((int(offer.tx_code) + 1) % 1_000_000).zfill(6)
    for _ in range(3):
        _refused(await holder.redeem(device, issuance, tx_code=wrong), "invalid_grant")
    late = await holder.redeem(device, issuance, tx_code=offer.tx_code)
    assert "already used" in _refused(late, "invalid_grant")


async def test_a_tx_code_for_an_offer_without_one_is_refused(
    browser: AsyncClient, device: AsyncClient, holder: SoftwareWallet
) -> None:
    offer = await make_offer(browser, tx_code=False)
    issuance = await holder.discover(device, offer.link)
    assert (
        "tx_code"
        not in issuance.offer["grants"]["urn:ietf:params:oauth:grant-type:pre-authorized_code"]
    )
    _refused(await holder.redeem(device, issuance, tx_code="123456"), "invalid_request")


async def test_an_expired_offer_is_refused(
    browser: AsyncClient, device: AsyncClient, holder: SoftwareWallet, clock: ManualClock
) -> None:
    offer = await make_offer(browser)
    issuance = await holder.discover(device, offer.link)
    clock.advance(601)
    answer = await holder.redeem(device, issuance, tx_code=offer.tx_code)
    assert "expired" in _refused(answer, "invalid_grant")


async def test_an_expired_access_token_or_nonce_is_refused(
    browser: AsyncClient, device: AsyncClient, holder: SoftwareWallet, clock: ManualClock
) -> None:
    issuance, token = await _ready(browser, device, holder)
    nonce = await holder.nonce(device, issuance)
    clock.advance(301)
    holder.now += 301
    proof = holder.proof(aud=ISSUER, nonce=nonce)
    _refused(
        await holder.request_credential(device, issuance, token=token, proof=proof),
        "invalid_token", status=401,
    )  # fmt: skip
    fresh, token = await _ready(browser, device, holder)
    answer = await holder.request_credential(device, fresh, token=token, proof=proof)
    assert "expired" in _refused(answer, "invalid_nonce")


async def test_codes_tokens_and_nonces_belong_to_their_tenant(
    app: object,
    browser: AsyncClient,
    device: AsyncClient,
    holder: SoftwareWallet,
    globex: TenantFixture,
) -> None:
    offer = await make_offer(browser)
    issuance = await holder.discover(device, offer.link)
    async with client(app, f"http://{globex.host}") as other:  # type: ignore[arg-type]
        form = {
            "grant_type": "urn:ietf:params:oauth:grant-type:pre-authorized_code",
            "pre-authorized_code": issuance.code, "tx_code": offer.tx_code or "",
        }  # fmt: skip
        _refused(await other.post("/oidc.ashx/token", data=form), "invalid_grant")
        token = (await holder.redeem(device, issuance, tx_code=offer.tx_code)).json()
        globex_nonce = (await other.post("/oidc.ashx/nonce")).json()["c_nonce"]
        proof = holder.proof(aud=f"http://{globex.host}/oidc.ashx", nonce=globex_nonce)
        body = {"credential_configuration_id": "staff", "proofs": {"jwt": [proof]}}
        headers = {"Authorization": f"Bearer {token['access_token']}"}
        answer = await other.post("/oidc.ashx/credential", json=body, headers=headers)
        _refused(answer, "invalid_token", status=401)
        # acme's credential endpoint does not take globex's c_nonce.
        proof = holder.proof(aud=ISSUER, nonce=globex_nonce)
        answer = await holder.request_credential(
            device, issuance, token=token["access_token"], proof=proof
        )
        _refused(answer, "invalid_nonce")


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"credential_configuration_id": "pid", "proofs": {"jwt": ["x"]}},
         "unknown_credential_configuration"),
        ({"credential_identifier": "staff-1", "proofs": {"jwt": ["x"]}},
         "unknown_credential_identifier"),
        ({"proofs": {"jwt": ["x"]}}, "invalid_credential_request"),
        ({"credential_configuration_id": "staff"}, "invalid_proof"),
        ({"credential_configuration_id": "staff", "proofs": {"jwt": ["a", "b"]}}, "invalid_proof"),
        ({"credential_configuration_id": "staff", "proofs": {"jwt": "x"}},
         "invalid_credential_request"),
        ({"credential_configuration_id": "staff", "proofs": {"jwt": ["x"]},
          "credential_response_encryption": {"enc": "A128GCM"}}, "invalid_encryption_parameters"),
    ],
)  # fmt: skip
async def test_malformed_credential_requests_are_refused(
    browser: AsyncClient,
    device: AsyncClient,
    holder: SoftwareWallet,
    body: dict[str, object],
    error: str,
) -> None:
    issuance, token = await _ready(browser, device, holder)
    headers = {"Authorization": f"Bearer {token}"}
    answer = await device.post(issuance.metadata["credential_endpoint"], json=body, headers=headers)
    _refused(answer, error)
