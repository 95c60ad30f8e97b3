"""The rules of the credential issuer: the tenant's issuer key, its metadata, the offer made to a
signed-in user (pre-authorized code, optional transaction code), the token for that code, the
``c_nonce``, and the staff credential (an SD-JWT VC bound to the key of the wallet's proof)."""

from __future__ import annotations

import datetime as dt
import json
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import orjson
from joserfc import jwt
from joserfc.jwk import ECKey
from jwcrypto.jwk import JWK
from sd_jwt.common import SDObj
from sd_jwt.issuer import SDJWTIssuer
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.tokens import TokenSet
from switchboard.identity.errors import OAuthError
from switchboard.identity.issuance import proof, repository, status
from switchboard.identity.issuance.models import CredentialNonce, CredentialOffer, IssuerKey
from switchboard.kit.crypto import SecretBox, constant_time_equals, random_token, sha256_hex
from switchboard.kit.errors import Unauthorized
from switchboard.tenants.models import Tenant

PRE_AUTHORIZED_GRANT = "urn:ietf:params:oauth:grant-type:pre-authorized_code"
CONFIGURATION_ID = "staff"
CREDENTIAL_FORMAT = "dc+sd-jwt"
SIGNING_ALG = "ES256"
OFFER_TTL = dt.timedelta(minutes=10)
TOKEN_TTL = dt.timedelta(minutes=5)
NONCE_TTL = dt.timedelta(minutes=5)
CREDENTIAL_TTL = dt.timedelta(days=30)
TX_CODE_LENGTH = 6
TX_CODE_ATTEMPTS = 3
# The staff credential's claims, each selectively disclosable; ``username`` names the user when
# the credential is presented back to this identity provider's verifier.
USERNAME_CLAIM = "username"
CLAIMS = (
    ("username", "Username"),
    ("role", "Role"),
    ("tenant", "Organisation"),
    ("email", "Email"),
)


@dataclass(frozen=True, slots=True)
class Issuer:
    """Where this tenant's credential issuer is: its identifier is the identity provider's
    issuer (``{scheme}://{host}/oidc.ashx``), so it is its own authorization server too."""

    identifier: str

    @property
    def vct(self) -> str:
        return f"{self.identifier}/credentials/{CONFIGURATION_ID}"

    @property
    def credential_endpoint(self) -> str:
        return f"{self.identifier}/credential"

    @property
    def nonce_endpoint(self) -> str:
        return f"{self.identifier}/nonce"


# The issuer key ---------------------------------------------------------------------------


async def signing_key(
    session: AsyncSession, *, tenant: Tenant, box: SecretBox, now: dt.datetime
) -> tuple[str, dict[str, Any]]:
    """The tenant's newest issuer key (made on first use): its kid and private JWK."""
    keys = await repository.list_keys(session, tenant_id=tenant.id)
    if keys:
        return keys[0].kid, orjson.loads(box.open(keys[0].private_jwk_sealed))
    kid = f"vci-{secrets.token_hex(8)}"
    key = ECKey.generate_key("P-256", parameters={"kid": kid, "alg": SIGNING_ALG}, private=True)
    private = dict(key.as_dict(private=True))
    session.add(
        IssuerKey(
            tenant_id=tenant.id, kid=kid, public_jwk=dict(key.as_dict(private=False)),
            private_jwk_sealed=box.seal(orjson.dumps(private).decode()), created_at=now,
        )
    )  # fmt: skip
    await session.flush()
    return kid, private


async def trusted_keys(session: AsyncSession, *, tenant: Tenant) -> list[IssuerKey]:
    """The tenant's issuer keys, which its own wallet verifier trusts for staff credentials."""
    return await repository.list_keys(session, tenant_id=tenant.id)


# Metadata ---------------------------------------------------------------------------------


def configuration(issuer: Issuer, *, tenant_name: str) -> dict[str, Any]:
    """The staff credential's entry of ``credential_configurations_supported``."""
    return {
        "format": CREDENTIAL_FORMAT,
        "vct": issuer.vct,
        "scope": CONFIGURATION_ID,
        "cryptographic_binding_methods_supported": ["jwk"],
        "credential_signing_alg_values_supported": [SIGNING_ALG],
        "proof_types_supported": {
            "jwt": {"proof_signing_alg_values_supported": list(proof.PROOF_ALGS)}
        },
        "credential_metadata": {
            "display": [{"name": f"Staff of {tenant_name}", "locale": "en"}],
            "claims": [
                {"path": [name], "display": [{"name": label, "locale": "en"}]}
                for name, label in CLAIMS
            ],
        },
    }


# Offers -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Offer:
    """A new offer as the user sees it: the wallet link (for the QR code) and the tx code."""

    link: str
    tx_code: str | None
    expires_at: dt.datetime


def _tx_code_object() -> dict[str, Any]:
    return {
        "input_mode": "numeric",
        "length": TX_CODE_LENGTH,
        "description": "The code shown beside the QR code on the page that offered this.",
    }


async def create_offer(
    session: AsyncSession,
    *,
    tenant: Tenant,
    user_id: int,
    issuer: Issuer,
    with_tx_code: bool,
    now: dt.datetime,
) -> Offer:
    """A credential offer by value (``openid-credential-offer://?credential_offer=...``) for the
    signed-in user; only the codes' hashes are stored."""
    code = random_token(nbytes=32)
    tx_code = (
        f"{secrets.randbelow(10**TX_CODE_LENGTH):0{TX_CODE_LENGTH}d}" if with_tx_code else None
    )
    session.add(
        CredentialOffer(
            tenant_id=tenant.id, user_id=user_id, code_hash=sha256_hex(code),
            tx_code_hash=sha256_hex(tx_code) if tx_code else None, created_at=now,
            expires_at=now + OFFER_TTL,
        )
    )  # fmt: skip
    await session.flush()
    grant: dict[str, Any] = {"pre-authorized_code": code}
    if tx_code:
        grant["tx_code"] = _tx_code_object()
    body = {
        "credential_issuer": issuer.identifier,
        "credential_configuration_ids": [CONFIGURATION_ID],
        "grants": {PRE_AUTHORIZED_GRANT: grant},
    }
    value = quote(json.dumps(body, separators=(",", ":")), safe="")
    link = f"openid-credential-offer://?credential_offer={value}"
    return Offer(link=link, tx_code=tx_code, expires_at=now + OFFER_TTL)


async def redeem(
    session: AsyncSession,
    *,
    tenant: Tenant,
    code: str | None,
    tx_code: str | None,
    now: dt.datetime,
) -> TokenSet:
    """``grant_type=urn:ietf:params:oauth:grant-type:pre-authorized_code``: a single-use code
    for an access token to the credential endpoint. The caller commits before raising, so a
    wrong tx code counts and a replay revokes what the first redemption issued."""
    if not code:
        raise OAuthError("invalid_request", "pre-authorized_code is required")
    offer = await repository.find_offer_by_code(
        session, tenant_id=tenant.id, code_hash=sha256_hex(code)
    )
    if offer is None:
        raise OAuthError("invalid_grant", "unknown pre-authorized code")
    if offer.redeemed_at is not None:
        offer.token_hash = None  # a replay: the token the first use issued stops working
        await session.flush()
        raise OAuthError("invalid_grant", "the pre-authorized code was already used")
    if offer.expires_at <= now:
        raise OAuthError("invalid_grant", "the credential offer has expired")
    if offer.tx_code_hash is None and tx_code is not None:
        raise OAuthError("invalid_request", "this offer expects no tx_code")
    if offer.tx_code_hash is not None:
        if not tx_code:
            raise OAuthError("invalid_request", "tx_code is required for this offer")
        if not constant_time_equals(sha256_hex(tx_code), offer.tx_code_hash):
            offer.tx_code_failures += 1
            if offer.tx_code_failures >= TX_CODE_ATTEMPTS:
                offer.redeemed_at = now  # too many guesses: the code is spent
            await session.flush()
            raise OAuthError("invalid_grant", "wrong tx_code")
    if not await repository.mark_redeemed(session, tenant_id=tenant.id, offer_id=offer.id, now=now):
        raise OAuthError("invalid_grant", "the pre-authorized code was already used")
    user = await repository.find_user(session, tenant_id=tenant.id, user_id=offer.user_id)
    if user is None or user.disabled:
        raise OAuthError("invalid_grant", "the user is no longer active")
    token = random_token("vat_", 32)
    offer.token_hash = sha256_hex(token)
    offer.token_expires_at = now + TOKEN_TTL
    await session.flush()
    ttl = int(TOKEN_TTL.total_seconds())
    return TokenSet(token, ttl, CONFIGURATION_ID, id_token=None, refresh_token=None)


# Nonces -----------------------------------------------------------------------------------


async def new_nonce(session: AsyncSession, *, tenant: Tenant, now: dt.datetime) -> str:
    nonce = secrets.token_urlsafe(32)
    session.add(CredentialNonce(tenant_id=tenant.id, nonce=nonce, expires_at=now + NONCE_TTL))
    await session.flush()
    return nonce


# Issuance ---------------------------------------------------------------------------------


def bearer_token(authorization: str | None) -> str:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("an access token from the pre-authorized code grant is required")
    return token.strip()


def _single_proof(request: dict[str, Any]) -> str:
    """The one ``jwt`` key proof of a credential request (no batch issuance is offered)."""
    if request.get("credential_identifier") is not None:
        raise OAuthError("unknown_credential_identifier", "no credential identifiers are issued")
    configuration_id = request.get("credential_configuration_id")
    if configuration_id is None:
        raise OAuthError("invalid_credential_request", "credential_configuration_id is required")
    if configuration_id != CONFIGURATION_ID:
        raise OAuthError("unknown_credential_configuration", f"only {CONFIGURATION_ID!r} is issued")
    if request.get("credential_response_encryption") is not None:
        raise OAuthError("invalid_encryption_parameters", "encrypted responses are not offered")
    proofs = request.get("proofs")
    if not isinstance(proofs, dict) or set(proofs) != {"jwt"}:
        raise proof.InvalidProof("proofs must hold key proofs of type jwt")
    jwts = proofs["jwt"]
    if not isinstance(jwts, list) or len(jwts) != 1 or not isinstance(jwts[0], str):
        raise proof.InvalidProof("exactly one jwt key proof is accepted (no batch issuance)")
    return jwts[0]


async def issue(
    session: AsyncSession,
    *,
    tenant: Tenant,
    issuer: Issuer,
    box: SecretBox,
    token: str,
    request: dict[str, Any],
    now: dt.datetime,
) -> str:
    """The staff credential for a credential request: the access token (one issuance), the key
    proof (typ, aud, iat, signature) and its c_nonce (used up here) are checked first."""
    offer = await repository.find_offer_by_token(
        session, tenant_id=tenant.id, token_hash=sha256_hex(token)
    )
    if offer is None or offer.token_expires_at is None or offer.token_expires_at <= now:
        raise Unauthorized("the access token is unknown or expired")
    if offer.issued_at is not None:
        raise Unauthorized("the access token was used for a credential already")
    checked = proof.check(
        _single_proof(request), audience=issuer.identifier, now=int(now.timestamp())
    )
    if not await repository.take_nonce(session, tenant_id=tenant.id, nonce=checked.nonce, now=now):
        raise proof.InvalidProof("the c_nonce is unknown, used or expired", code="invalid_nonce")
    user = await repository.find_user(session, tenant_id=tenant.id, user_id=offer.user_id)
    if user is None or user.disabled:
        raise OAuthError("credential_request_denied", "the user is no longer active")
    if not await repository.mark_issued(session, tenant_id=tenant.id, offer_id=offer.id, now=now):
        raise Unauthorized("the access token was used for a credential already")
    kid, private = await signing_key(session, tenant=tenant, box=box, now=now)
    entry = await status.allocate(
        session, tenant=tenant, identifier=issuer.identifier, user_id=user.id,
        username=user.username, expires_at=now + CREDENTIAL_TTL, now=now,
    )  # fmt: skip
    claims: dict[Any, Any] = {
        "iss": issuer.identifier,
        "vct": issuer.vct,
        "iat": int(now.timestamp()),
        "exp": int((now + CREDENTIAL_TTL).timestamp()),
        "status": entry,
        SDObj("username"): user.username,
        SDObj("role"): user.role,
        SDObj("tenant"): tenant.name,
    }
    if user.email:
        claims[SDObj("email")] = user.email
    signed = SDJWTIssuer(
        claims, JWK(**private), JWK(**checked.holder_jwk), sign_alg=SIGNING_ALG,
        extra_header_parameters={"typ": CREDENTIAL_FORMAT, "kid": kid},
    )  # fmt: skip
    return str(signed.sd_jwt_issuance)


async def status_list_token(
    session: AsyncSession,
    *,
    tenant: Tenant,
    issuer: Issuer,
    box: SecretBox,
    list_id: str,
    now: dt.datetime,
) -> str:
    """The status list token of the tenant's list ``list_id`` (Token Status List section 5.1),
    signed with the issuer key that signs its credentials."""
    lst = await status.list_value(session, tenant=tenant, list_id=list_id)
    kid, private = await signing_key(session, tenant=tenant, box=box, now=now)
    claims = status.claims(
        status.uri(issuer.identifier, list_id), lst, issuer=issuer.identifier, now=now
    )
    header = {"alg": SIGNING_ALG, "kid": kid, "typ": status.LIST_TYP}
    return jwt.encode(header, claims, ECKey.import_key(private), algorithms=[SIGNING_ALG])
