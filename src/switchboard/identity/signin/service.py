"""Authorization requests, codes and browser sessions (OAuth 2.0 + PKCE, OpenID Connect Core)."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import (
    USER_AGENT_CHARS,
    AuthorizationCode,
    BrowserSession,
    OidcClient,
    User,
)
from switchboard.auth.tokens import TokenIssuer, TokenSet
from switchboard.identity import clients
from switchboard.identity.errors import OAuthError
from switchboard.identity.service import (
    parse_scopes,
    revoke_refresh_family,
    revoke_session_tokens,
)
from switchboard.kit.clock import Clock
from switchboard.kit.crypto import constant_time_equals, random_token, sha256_hex
from switchboard.kit.http import first_repeated
from switchboard.tenants.models import Tenant

CODE_TTL = dt.timedelta(seconds=60)
VERIFIER_RE = re.compile(r"^[A-Za-z0-9\-._~]{43,128}$")
CHALLENGE_RE = re.compile(r"^[A-Za-z0-9\-_]{43}$")  # base64url of a SHA-256, unpadded
# consent: the operator's registration of a (first-party) client is the consent, no screen asks
# again; select_account: the login page is where another account is chosen (decision 0013).
PROMPTS = frozenset({"none", "login", "consent", "select_account"})
# The values that show the login page even to a browser signed in.
_SHOW_LOGIN = frozenset({"login", "select_account"})
MAX_PARAM = 2048


class PageError(Exception):
    """The request cannot be trusted to redirect (unknown client or redirect URI): the browser
    gets an error page instead (RFC 6749 section 4.1.2.1)."""

    def __init__(self, description: str, *, status: int = 400) -> None:
        super().__init__(description)
        self.description = description
        self.status = status


class RedirectError(OAuthError):
    """An error sent back to the client's registered redirect URI with its ``state``."""

    def __init__(self, code: str, description: str, *, redirect_uri: str, state: str | None):
        super().__init__(code, description)
        self.redirect_uri = redirect_uri
        self.state = state


class Refused(Exception):
    """A sign-in by other means (federation, wallet) cannot go on; the description is shown to
    the person signing in."""

    def __init__(self, description: str, *, status: int = 403) -> None:
        super().__init__(description)
        self.description = description
        self.status = status
        # The authorization request the sign-in answers, once known: the login page shows again.
        self.authorize_query: str | None = None


@dataclass(frozen=True, slots=True)
class AuthorizationRequest:
    client: OidcClient
    redirect_uri: str
    state: str | None
    scopes: list[str]
    code_challenge: str
    nonce: str | None
    prompt: frozenset[str] = field(default_factory=frozenset)
    max_age: int | None = None


def s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


async def parse_request(
    session: AsyncSession, *, tenant: Tenant, params: Sequence[tuple[str, str]]
) -> AuthorizationRequest:
    """Validate an authorization request. The client and redirect URI are checked first: until
    they are known good, nothing is redirected anywhere."""
    repeated = first_repeated(params)
    if repeated is not None:
        raise PageError(f"the parameter {repeated!r} is repeated")
    values: dict[str, str] = {}
    for key, value in params:
        if len(value) > MAX_PARAM or "\x00" in value:
            raise PageError(f"the parameter {key!r} is too long or malformed")
        values[key] = value
    client_id = values.get("client_id", "")
    redirect_uri = values.get("redirect_uri", "")
    if not client_id:
        raise PageError("client_id is missing")
    client = await clients.find_client(session, tenant_id=tenant.id, client_id=client_id)
    if client is None:
        raise PageError("unknown client")
    if not redirect_uri:
        raise PageError("redirect_uri is missing")
    if not await clients.is_registered(session, client, clients.REDIRECT, redirect_uri):
        raise PageError("redirect_uri is not registered for this client")
    state = values.get("state")

    def fail(code: str, description: str) -> RedirectError:
        return RedirectError(code, description, redirect_uri=redirect_uri, state=state)

    if "request" in values or "request_uri" in values:
        raise fail("request_not_supported", "request objects are not supported")
    if values.get("response_type") != "code":
        raise fail("unsupported_response_type", "only response_type=code is served")
    if values.get("response_mode", "query") != "query":
        raise fail("invalid_request", "only response_mode=query is served")
    try:
        scopes = parse_scopes(values.get("scope"))
    except OAuthError as exc:
        raise fail(exc.code, exc.description) from None
    challenge = values.get("code_challenge")
    if not challenge:
        raise fail("invalid_request", "code_challenge is required (PKCE with S256)")
    if values.get("code_challenge_method", "plain") != "S256":
        raise fail("invalid_request", "code_challenge_method must be S256")
    if not CHALLENGE_RE.match(challenge):
        raise fail("invalid_request", "code_challenge is not a base64url SHA-256 digest")
    prompt = frozenset(values.get("prompt", "").split())
    if not prompt <= PROMPTS or ("none" in prompt and len(prompt) > 1):
        raise fail(
            "invalid_request", "prompt must be none, or any of login, consent, select_account"
        )
    max_age: int | None = None
    if "max_age" in values:
        if not values["max_age"].isdigit():
            raise fail("invalid_request", "max_age must be a non-negative integer")
        max_age = int(values["max_age"])
    nonce = values.get("nonce")
    if nonce is not None and len(nonce) > 512:
        raise fail("invalid_request", "nonce is longer than 512 characters")
    return AuthorizationRequest(
        client=client,
        redirect_uri=redirect_uri,
        state=state,
        scopes=scopes,
        code_challenge=challenge,
        nonce=nonce,
        prompt=prompt,
        max_age=max_age,
    )


# Browser sessions ------------------------------------------------------------------------


async def current_session(
    session: AsyncSession, *, tenant: Tenant, token: str | None, now: dt.datetime
) -> BrowserSession | None:
    """The live session a cookie names on this tenant, if any."""
    if not token:
        return None
    stmt = select(BrowserSession).where(BrowserSession.token_hash == sha256_hex(token))
    row = (await session.execute(stmt)).scalar_one_or_none()
    if row is None or row.tenant_id != tenant.id or row.ended_at is not None:
        return None
    if row.expires_at <= now:
        return None
    user = await session.get(User, row.user_id)
    if user is None or user.disabled:
        return None
    return row


def must_sign_in(
    request: AuthorizationRequest, browser: BrowserSession | None, now: dt.datetime
) -> bool:
    """Whether the user has to (re-)enter credentials (OIDC Core 3.1.2.1: prompt, max_age);
    ``select_account`` too, as the login page is where the browser chooses the account."""
    if browser is None or not _SHOW_LOGIN.isdisjoint(request.prompt):
        return True
    if request.max_age is not None:
        return (now - browser.auth_time).total_seconds() > request.max_age
    return False


async def start_session(
    session: AsyncSession,
    *,
    tenant: Tenant,
    user: User,
    now: dt.datetime,
    ttl_seconds: int,
    replacing: BrowserSession | None,
    user_agent: str,
    address: str,
) -> tuple[BrowserSession, str]:
    """A new session for a fresh sign-in; the browser's previous one (if any) ends. The
    browser's User-Agent (cut to ``USER_AGENT_CHARS``) and address describe it to an admin."""
    if replacing is not None:
        replacing.ended_at = now
    token = random_token(nbytes=32)
    row = BrowserSession(
        token_hash=sha256_hex(token),
        sid=secrets.token_hex(16),  # no leading "-", which a command line would read as an option
        user_agent=user_agent[:USER_AGENT_CHARS],
        address=address[:64],
        tenant_id=tenant.id,
        user_id=user.id,
        auth_time=now,
        expires_at=now + dt.timedelta(seconds=ttl_seconds),
    )
    session.add(row)
    await session.flush()
    return row, token


async def end_session(session: AsyncSession, *, token: str | None, now: dt.datetime) -> bool:
    """End the browser's session (RP-initiated logout) and revoke the refresh tokens issued
    through it, as ending it from the CLI or the console does (decision 0605)."""
    if not token:
        return False
    stmt = select(BrowserSession).where(
        BrowserSession.token_hash == sha256_hex(token), BrowserSession.ended_at.is_(None)
    )
    found = (await session.execute(stmt)).scalar_one_or_none()
    if found is None:
        return False
    found.ended_at = now
    await revoke_session_tokens(session, user_id=found.user_id, sid=found.sid, now=now)
    await session.flush()
    return True


# Codes -----------------------------------------------------------------------------------


async def issue_code(
    session: AsyncSession,
    *,
    tenant: Tenant,
    request: AuthorizationRequest,
    browser: BrowserSession,
    issuer: str,
    now: dt.datetime,
) -> str:
    """A 256-bit single-use code, valid for 60 s, for ``issuer`` (the one the authorization
    response names in ``iss``) only; only its hash is stored."""
    code = random_token(nbytes=32)
    session.add(
        AuthorizationCode(
            code_hash=sha256_hex(code),
            tenant_id=tenant.id,
            user_id=browser.user_id,
            client_id=request.client.client_id,
            redirect_uri=request.redirect_uri,
            code_challenge=request.code_challenge,
            scope=" ".join(request.scopes),
            nonce=request.nonce,
            auth_time=browser.auth_time,
            expires_at=now + CODE_TTL,
            family_id=secrets.token_hex(16),
            sid=browser.sid,
            issuer=issuer,
        )
    )
    await session.flush()
    return code


async def redeem_code(
    session: AsyncSession,
    *,
    tenant: Tenant,
    issuer: str,
    tokens: TokenIssuer,
    clock: Clock,
    client: OidcClient,
    code: str | None,
    redirect_uri: str | None,
    code_verifier: str | None,
) -> TokenSet:
    """``grant_type=authorization_code``. Any exchange attempt by the code's client uses the
    code up, one at another issuer of the tenant (another of its hosts) too; presenting a used
    code again revokes the refresh tokens it issued."""
    if not code or not code_verifier or not redirect_uri:
        raise OAuthError("invalid_request", "code, redirect_uri and code_verifier are required")
    stmt = select(AuthorizationCode).where(AuthorizationCode.code_hash == sha256_hex(code))
    row = (await session.execute(stmt)).scalar_one_or_none()
    now = clock.now()
    if row is None or row.tenant_id != tenant.id or row.client_id != client.client_id:
        raise OAuthError("invalid_grant", "unknown authorization code")
    burned = await session.execute(
        update(AuthorizationCode)
        .where(AuthorizationCode.id == row.id, AuthorizationCode.used_at.is_(None))
        .values(used_at=now)
    )
    if not getattr(burned, "rowcount", 0):
        await revoke_refresh_family(session, family_id=row.family_id, now=now)
        raise OAuthError(
            "invalid_grant", "the code was already used; the tokens it issued are revoked"
        )
    await session.flush()
    if row.issuer != issuer:  # only where the response named it (its `iss`, RFC 9207)
        raise OAuthError("invalid_grant", "the authorization code was issued by another issuer")
    if row.expires_at <= now:
        raise OAuthError("invalid_grant", "the authorization code has expired")
    if row.redirect_uri != redirect_uri:
        raise OAuthError("invalid_grant", "redirect_uri differs from the authorization request")
    if not VERIFIER_RE.match(code_verifier) or not constant_time_equals(
        s256(code_verifier), row.code_challenge
    ):
        raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge")
    user = await session.get(User, row.user_id)
    if user is None or user.disabled:
        raise OAuthError("invalid_grant", "the user is no longer active")
    id_claims: dict[str, object] = {"auth_time": int(row.auth_time.timestamp())}
    if row.nonce is not None:
        id_claims["nonce"] = row.nonce
    return await tokens.issue(
        session,
        issuer=issuer,
        tenant_name=tenant.name,
        user=user,
        client_id=client.client_id,
        scopes=row.scope.split(),
        family_id=row.family_id,
        id_claims=id_claims,
        sid=row.sid,
    )
