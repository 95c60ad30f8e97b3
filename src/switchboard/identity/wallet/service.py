"""The rules of the wallet sign-in: the tenant's trusted PID issuers, the OpenID4VP request a
wallet answers (signed request object, DCQL query), the wallet's answer turned into a local user,
and the waiting browser's sign-in once it is there."""

from __future__ import annotations

import datetime as dt
import json
import re
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import JWKRegistry
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.keys import Keyring
from switchboard.auth.models import User
from switchboard.identity.issuance import service as issuance
from switchboard.identity.issuance import status as issuance_status
from switchboard.identity.signin.service import Refused as Refused
from switchboard.identity.wallet import repository
from switchboard.identity.wallet import status as credential_status
from switchboard.identity.wallet.models import PresentationRequest, TrustedIssuer
from switchboard.identity.wallet.status import StatusLists
from switchboard.identity.wallet.verify import PID_VCT, Invalid, Presented, Trust, verify
from switchboard.kit.crypto import random_token, sha256_hex
from switchboard.kit.errors import BadRequest, Conflict, NotFound
from switchboard.tenants.models import Tenant

REQUEST_TTL = dt.timedelta(minutes=5)
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
CLAIM_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
REQUEST_TYP = "oauth-authz-req+jwt"
PID_ID = "pid"
STAFF_ID = "staff"


# Trusted issuers -------------------------------------------------------------------------


def _public_jwk(text: str) -> tuple[dict[str, Any], str]:
    """The public part of a JWK (EC, OKP or RSA) and its kid (given, else its thumbprint)."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not an object")
        if data.get("kty") not in ("EC", "OKP", "RSA"):
            raise ValueError("kty is not EC, OKP or RSA")
        key = JWKRegistry.import_key(data)
    except (ValueError, KeyError, JoseError) as exc:
        raise BadRequest(f"not a public JWK (EC, OKP or RSA): {exc}") from None
    public = key.as_dict(private=False)
    kid = str(data.get("kid") or key.thumbprint())
    return {**public, "kid": kid}, kid


async def add_issuer(
    session: AsyncSession,
    *,
    tenant: Tenant,
    name: str,
    jwk: str,
    username_claim: str,
    now: dt.datetime,
) -> TrustedIssuer:
    if not NAME_RE.match(name):
        raise BadRequest("name must be 1-64 of a-z, 0-9 and '-', starting with a letter or digit")
    if not CLAIM_RE.match(username_claim):
        raise BadRequest(f"{username_claim!r} is not a claim name")
    public, kid = _public_jwk(jwk)
    existing = await repository.list_issuers(session, tenant_id=tenant.id)
    if any(row.name == name for row in existing):
        raise Conflict(f"issuer {name!r} already exists", code="duplicate_issuer")
    if any(row.kid == kid for row in existing):
        raise Conflict(f"a trusted key with kid {kid!r} already exists", code="duplicate_key")
    row = TrustedIssuer(
        tenant_id=tenant.id, name=name, kid=kid, jwk=public, username_claim=username_claim,
        created_at=now,
    )  # fmt: skip
    session.add(row)
    await session.flush()
    return row


async def remove_issuer(session: AsyncSession, *, tenant: Tenant, name: str) -> None:
    row = await repository.find_issuer(session, tenant_id=tenant.id, name=name)
    if row is None:
        raise NotFound(f"no issuer {name!r}")
    await session.delete(row)
    await session.flush()


async def trust(session: AsyncSession, *, tenant: Tenant, staff_vct: str) -> list[Trust]:
    """What signs users in: the trusted PID issuers' keys, and the tenant's own credential
    issuer keys for its staff credential (trusted without being added: decision 0022)."""
    pids = [
        Trust(kid=row.kid, jwk=row.jwk, vct=PID_VCT, username_claim=row.username_claim)
        for row in await repository.list_issuers(session, tenant_id=tenant.id)
    ]
    own = [
        Trust(
            kid=key.kid, jwk=key.public_jwk, vct=staff_vct, username_claim=issuance.USERNAME_CLAIM
        )
        for key in await issuance.trusted_keys(session, tenant=tenant)
    ]
    return pids + own


async def offered(session: AsyncSession, *, tenant: Tenant) -> bool:
    """Whether the login page offers the wallet: a PID issuer is trusted, or the tenant has
    issued staff credentials."""
    if await repository.list_issuers(session, tenant_id=tenant.id):
        return True
    return bool(await issuance.trusted_keys(session, tenant=tenant))


# The presentation request ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Verifier:
    """Where this tenant's verifier is: its client_id (pre-registered with wallets) and URLs,
    and the type of the staff credentials its own issuer issues on this host."""

    client_id: str
    base_url: str  # .../oidc.ashx/wallet
    staff_vct: str
    issuer: str  # .../oidc.ashx, whose status lists are the tenant's own

    def request_uri(self, state: str) -> str:
        return f"{self.base_url}/request/{state}"

    @property
    def response_uri(self) -> str:
        return f"{self.base_url}/response"

    def wallet_link(self, state: str) -> str:
        query = urlencode({"client_id": self.client_id, "request_uri": self.request_uri(state)})
        return f"openid4vp://?{query}"


async def begin(
    session: AsyncSession, *, tenant: Tenant, authorize_query: str, now: dt.datetime
) -> tuple[PresentationRequest, str]:
    """A new presentation request and the token binding it to this browser (its cookie)."""
    if not await offered(session, tenant=tenant):
        raise Refused("signing in with a wallet is not offered here", status=404)
    browser_token = random_token(nbytes=32)
    row = PresentationRequest(
        state=secrets.token_urlsafe(32), tenant_id=tenant.id,
        browser_hash=sha256_hex(browser_token), nonce=secrets.token_urlsafe(32),
        authorize_query=authorize_query, expires_at=now + REQUEST_TTL,
    )  # fmt: skip
    session.add(row)
    await session.flush()
    return row, browser_token


async def _pending(
    session: AsyncSession, *, tenant: Tenant, state: str, now: dt.datetime
) -> PresentationRequest:
    row = await repository.find_request(session, tenant_id=tenant.id, state=state)
    if row is None or row.expires_at <= now:
        raise Refused("this wallet request is unknown or expired", status=400)
    return row


async def pending_request(
    session: AsyncSession, *, tenant: Tenant, state: str
) -> PresentationRequest:
    row = await repository.find_request(session, tenant_id=tenant.id, state=state)
    if row is None:
        raise Refused("this wallet request is unknown", status=400)
    return row


def dcql_query(trusted: list[Trust]) -> dict[str, Any]:
    """DCQL (OpenID4VP 1.0 section 6): a PID or a staff credential as SD-JWT VC, with the claims
    that name the user; one of them when both are trusted (``credential_sets``)."""
    wanted = {PID_ID: [t for t in trusted if t.vct == PID_VCT]}
    wanted[STAFF_ID] = [t for t in trusted if t.vct != PID_VCT]
    credentials = [
        {
            "id": credential_id,
            "format": "dc+sd-jwt",
            "meta": {"vct_values": sorted({t.vct for t in trusts})},
            "claims": [{"path": [claim]} for claim in sorted({t.username_claim for t in trusts})],
        }
        for credential_id, trusts in wanted.items()
        if trusts
    ]
    query: dict[str, Any] = {"credentials": credentials}
    if len(credentials) > 1:
        query["credential_sets"] = [{"options": [[c["id"]] for c in credentials]}]
    return query


async def request_object(
    session: AsyncSession,
    *,
    tenant: Tenant,
    state: str,
    verifier: Verifier,
    keyring: Keyring,
    now: dt.datetime,
) -> str:
    """The signed authorization request (JAR, RFC 9101) a wallet fetches from request_uri."""
    row = await _pending(session, tenant=tenant, state=state, now=now)
    if row.response_hash is not None:
        raise Refused("this wallet request is answered already", status=400)
    trusted = await trust(session, tenant=tenant, staff_vct=verifier.staff_vct)
    kid, key = await keyring.ensure_signer(session)
    claims = {
        "iss": verifier.client_id,
        "aud": "https://self-issued.me/v2",
        "client_id": verifier.client_id,
        "response_type": "vp_token",
        "response_mode": "direct_post",
        "response_uri": verifier.response_uri,
        "nonce": row.nonce,
        "state": row.state,
        "dcql_query": dcql_query(trusted),
        "iat": int(now.timestamp()),
        "exp": int(row.expires_at.timestamp()),
    }
    header = {"alg": "RS256", "kid": kid, "typ": REQUEST_TYP}
    return jwt.encode(header, claims, key, algorithms=["RS256"])


def _presentation(vp_token: str) -> str:
    """The one presentation of a vp_token (a JSON object keyed by the DCQL credential id)."""
    try:
        token = json.loads(vp_token)
    except ValueError:
        raise Invalid("vp_token is not JSON") from None
    values = [token.get(key) for key in (PID_ID, STAFF_ID)] if isinstance(token, dict) else []
    presented = [v for v in values if v is not None]
    if len(presented) != 1:
        raise Invalid("vp_token holds no single 'pid' or 'staff' presentation")
    value = presented[0]
    if not isinstance(value, list) or len(value) != 1 or not isinstance(value[0], str):
        raise Invalid("vp_token holds no single 'pid' or 'staff' presentation")
    return value[0]


async def status_list_to_fetch(
    session: AsyncSession,
    *,
    tenant: Tenant,
    state: str | None,
    vp_token: str | None,
    verifier: Verifier,
    now: dt.datetime,
) -> str | None:
    """The status list of another issuer that the wallet's answer names, when the answer
    verifies: what ``accept_response`` will check, for the caller to fetch before that
    transaction opens (decision 0029). None otherwise; ``accept_response`` then decides."""
    row = await repository.find_request(session, tenant_id=tenant.id, state=state or "")
    if row is None or row.expires_at <= now or row.response_hash is not None or not vp_token:
        return None
    try:
        presented = verify(
            _presentation(vp_token),
            trusted=await trust(session, tenant=tenant, staff_vct=verifier.staff_vct),
            audience=verifier.client_id, nonce=row.nonce, now=int(now.timestamp()),
        )  # fmt: skip
        ref = credential_status.reference(presented.claims)
    except Invalid:
        return None
    if ref is None or presented.issuer.vct == verifier.staff_vct:
        return None
    return ref.uri


async def accept_response(
    session: AsyncSession,
    *,
    tenant: Tenant,
    state: str | None,
    vp_token: str | None,
    error: str | None,
    verifier: Verifier,
    lists: StatusLists,
    now: dt.datetime,
) -> None:
    """The wallet's direct_post answer: verified (its status list entry too, in the list
    ``lists`` holds) and recorded on its request (once only)."""
    if not state:
        raise Invalid("state is missing")
    row = await repository.find_request(session, tenant_id=tenant.id, state=state)
    if row is None or row.expires_at <= now:
        raise Invalid("the request is unknown or expired")
    if row.response_hash is not None:
        raise Invalid("the request is answered already")
    row.response_hash = sha256_hex(vp_token or error or "")
    if error or not vp_token:
        row.failure = "the wallet did not share your identity"
        await session.flush()
        return
    try:
        presented = verify(
            _presentation(vp_token),
            trusted=await trust(session, tenant=tenant, staff_vct=verifier.staff_vct),
            audience=verifier.client_id, nonce=row.nonce, now=int(now.timestamp()),
        )  # fmt: skip
        await _check_status(
            session, tenant=tenant, presented=presented, verifier=verifier, lists=lists, now=now
        )
    except Invalid as exc:
        row.failure = "the identity your wallet shared could not be verified"
        await session.flush()
        raise exc from None
    row.user_id, row.failure = await _local_user(session, tenant=tenant, presented=presented)
    await session.flush()


async def _check_status(
    session: AsyncSession,
    *,
    tenant: Tenant,
    presented: Presented,
    verifier: Verifier,
    lists: StatusLists,
    now: dt.datetime,
) -> None:
    """Refuse a credential whose status list entry is not valid. The tenant's own staff
    credentials name its own lists, read in-process; any other URI is refused for them."""
    ref = credential_status.reference(presented.claims)
    if ref is None:
        return
    if presented.issuer.vct != verifier.staff_vct:
        credential_status.check_external(
            lists, ref, issuer=presented.issuer, now=int(now.timestamp())
        )
        return
    prefix = issuance_status.uri(verifier.issuer, "")
    list_id = ref.uri.removeprefix(prefix)
    if not ref.uri.startswith(prefix) or not list_id or "/" in list_id:
        raise Invalid("the credential's status list is not its issuer's")
    try:
        value = await issuance_status.entry_status(
            session, tenant=tenant, list_id=list_id, idx=ref.idx
        )
    except (NotFound, issuance_status.InvalidList):
        raise Invalid("the credential's status list entry is unknown") from None
    if value != issuance_status.VALID:
        raise Invalid("the credential has been revoked")


async def _local_user(
    session: AsyncSession, *, tenant: Tenant, presented: Presented
) -> tuple[int | None, str | None]:
    """The user the mapped claim names (linked by username), or why there is none."""
    claim = presented.issuer.username_claim
    username = presented.claims.get(claim)
    if not isinstance(username, str) or not username:
        return None, f"your identity has no {claim!r} to name you by"
    user = await repository.find_user_by_username(session, tenant_id=tenant.id, username=username)
    if user is None:
        return None, "no account here is linked to your identity; ask an administrator"
    if user.disabled:
        return None, "your account is disabled"
    return user.id, None


async def finish(
    session: AsyncSession,
    *,
    tenant: Tenant,
    state: str | None,
    browser_token: str | None,
    now: dt.datetime,
) -> tuple[User, str] | None:
    """For the waiting browser: the signed-in user and the authorization request's query once the
    wallet answered, ``None`` while it has not."""
    if not state:
        raise Refused("this wallet request is unknown", status=400)
    row = await repository.find_request(session, tenant_id=tenant.id, state=state)
    if row is None or row.used_at is not None:
        raise Refused("this wallet request is unknown or used; please start again", status=400)
    if not browser_token or sha256_hex(browser_token) != row.browser_hash:
        raise Refused("this sign-in was started in another browser; please start again", status=400)
    refusal: Refused | None = None
    if row.failure is not None:
        refusal = Refused(row.failure)
    elif row.user_id is None:
        if row.expires_at > now:
            return None
        refusal = Refused("the wallet did not answer in time; please start again", status=400)
    row.used_at = now
    await session.flush()
    user = None
    if refusal is None and row.user_id is not None:
        user = await repository.find_user(session, tenant_id=tenant.id, user_id=row.user_id)
        if user is None or user.disabled:
            refusal = Refused("your account is disabled")
    if refusal is not None or user is None:
        refusal = refusal or Refused("your account is disabled")
        refusal.authorize_query = row.authorize_query
        raise refusal
    return user, row.authorize_query
