"""Identity rules: users, clients, the password and refresh grants, API keys."""

from __future__ import annotations

import datetime as dt
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Select, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.keycache import REVOCATIONS
from switchboard.auth.models import (
    ROLES,
    ApiKey,
    BrowserSession,
    OidcClient,
    RefreshToken,
    User,
)
from switchboard.auth.passwords import Passwords
from switchboard.auth.tokens import TokenIssuer, TokenSet
from switchboard.identity import lockout
from switchboard.identity.errors import OAuthError
from switchboard.kit.clock import Clock
from switchboard.kit.crypto import random_token, sha256_hex
from switchboard.kit.db import Database
from switchboard.kit.errors import BadRequest, Conflict, Forbidden, NotFound
from switchboard.tenants import service as tenants
from switchboard.tenants.models import Tenant

SUPPORTED_SCOPES = ("openid", "offline_access", "profile", "email")


# Users and clients -----------------------------------------------------------------------


async def create_user(
    session: AsyncSession,
    *,
    tenant: Tenant,
    username: str,
    password: str | None,
    role: str,
    clock: Clock,
    passwords: Passwords,
) -> User:
    """A new user of ``tenant``; ``password=None`` makes one without a usable password (signed
    in only through a federated provider until an administrator sets one)."""
    if role not in ROLES:
        raise BadRequest(f"role must be one of {', '.join(ROLES)}")
    if not username or len(username) > 128 or any(c.isspace() for c in username):
        raise BadRequest("username must be 1-128 characters without spaces")
    if password is not None and len(password) < 8:
        raise BadRequest("password must have at least 8 characters")
    exists = await session.execute(
        select(User.id).where(User.tenant_id == tenant.id, User.username == username)
    )
    if exists.first() is not None:
        raise Conflict(f"user {username!r} already exists", code="duplicate_user")
    user = User(
        tenant_id=tenant.id,
        username=username,
        password_hash=passwords.unusable() if password is None else await passwords.hash(password),
        role=role,
        created_at=clock.now(),
    )
    session.add(user)
    await session.flush()
    return user


async def get_user(session: AsyncSession, *, tenant_id: int, username: str) -> User:
    user = await find_user(session, tenant_id=tenant_id, username=username)
    if user is None:
        raise NotFound(f"no user {username!r} in this tenant")
    return user


async def list_users(session: AsyncSession, *, tenant_id: int) -> list[User]:
    stmt = select(User).where(User.tenant_id == tenant_id).order_by(User.username)
    return list((await session.execute(stmt)).scalars())


def _not_self(user: User, actor_id: int | None, what: str) -> None:
    """An admin acting from the console cannot lock themselves out (the CLI has no actor)."""
    if actor_id is not None and user.id == actor_id:
        raise Forbidden(f"an admin cannot {what} their own account", code="own_account")


async def revoke_refresh_tokens(session: AsyncSession, user: User, clock: Clock) -> None:
    await session.execute(
        update(RefreshToken)
        .where(RefreshToken.user_id == user.id, RefreshToken.revoked_at.is_(None))
        .values(revoked_at=clock.now())
    )


async def _end_browser_sessions(session: AsyncSession, user: User, clock: Clock) -> None:
    """The identity provider forgets every browser the user signed in with: the next sign-in
    asks for the password again."""
    await session.execute(
        update(BrowserSession)
        .where(BrowserSession.user_id == user.id, BrowserSession.ended_at.is_(None))
        .values(ended_at=clock.now())
    )


async def set_password(
    session: AsyncSession,
    *,
    tenant_id: int,
    username: str,
    password: str,
    clock: Clock,
    passwords: Passwords,
    actor_id: int | None = None,
) -> User:
    """A new password; a lockout is lifted and every session held with the old one ends: the
    refresh tokens, the identity provider's browser sessions, and the web apps' session cookies
    (they carry a stamp of the password, ``auth.models.credential_stamp``)."""
    if len(password) < 8:
        raise BadRequest("password must have at least 8 characters")
    user = await get_user(session, tenant_id=tenant_id, username=username)
    _not_self(user, actor_id, "reset the password of")
    user.password_hash = await passwords.hash(password)
    user.failed_logins = 0
    user.locked_until = None
    await lockout.forget_devices(session, user)
    await revoke_refresh_tokens(session, user, clock)
    await _end_browser_sessions(session, user, clock)
    await session.flush()
    return user


async def reset_password(
    session: AsyncSession,
    *,
    tenant_id: int,
    username: str,
    actor_id: int,
    passwords: Passwords,
    clock: Clock,
) -> str:
    """Give the user a new random password (returned once), lift any lockout and end every
    session held with the old password (``set_password``)."""
    password = secrets.token_urlsafe(12)
    await set_password(
        session, tenant_id=tenant_id, username=username, password=password, clock=clock,
        passwords=passwords, actor_id=actor_id,
    )  # fmt: skip
    return password


async def sign_out_everywhere(
    session: AsyncSession, *, tenant_id: int, username: str, clock: Clock
) -> User:
    """End every session of the user, its password kept (decision 0604): a fresh security
    stamp ends the web apps' session cookies (``auth.models.credential_stamp``) on their next
    request, the identity provider forgets every browser the user signed in with, and the
    refresh tokens are revoked, and with them the access tokens issued alongside (decision
    0034). API keys and access tokens issued without a refresh token are left alone."""
    user = await get_user(session, tenant_id=tenant_id, username=username)
    user.security_stamp = secrets.token_urlsafe(16)
    await lockout.forget_devices(session, user)  # the new stamp distrusts them all
    await revoke_refresh_tokens(session, user, clock)
    await _end_browser_sessions(session, user, clock)
    await session.flush()
    return user


async def unlock_user(session: AsyncSession, *, tenant_id: int, username: str) -> User:
    """Lift a sign-in lockout and forget the failed attempts, those of the user's browsers
    with a device cookie (decision 0031) too."""
    user = await get_user(session, tenant_id=tenant_id, username=username)
    user.failed_logins = 0
    user.locked_until = None
    await lockout.forget_devices(session, user)
    await session.flush()
    return user


async def set_role(
    session: AsyncSession, *, tenant_id: int, username: str, role: str, actor_id: int | None = None
) -> User:
    """A new role, in force on the user's next request (its live tokens and API keys included)."""
    if role not in ROLES:
        raise BadRequest(f"role must be one of {', '.join(ROLES)}")
    user = await get_user(session, tenant_id=tenant_id, username=username)
    if user.role != role:
        _not_self(user, actor_id, "change the role of")
        REVOCATIONS.after_commit_of(session)  # its keys' cached authority goes too
    user.role = role
    await session.flush()
    return user


# sip: or sips:, an optional user part, a host name or IPv4 or [IPv6], a port, URI parameters.
SIP_URI_RE = re.compile(
    r"^sips?:(?:[^@\s<>\"]+@)?(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])"
    r"(?::[0-9]{1,5})?(?:;[^\s<>\"]*)?$"
)
MAX_SIP_URI = 255


def check_sip_uri(uri: str) -> str:
    uri = uri.strip()
    if len(uri) > MAX_SIP_URI or not SIP_URI_RE.match(uri):
        raise BadRequest(
            f"SIP address: a sip: or sips: URI such as sip:anna@pbx.example.net:5060, "
            f"at most {MAX_SIP_URI} characters"
        )
    return uri


async def set_sip_uri(
    session: AsyncSession, *, tenant_id: int, username: str, uri: str | None
) -> User:
    """Store where the media bridge rings ``username`` for office-tab calls; None clears it."""
    clean = None if uri is None else check_sip_uri(uri)
    user = await get_user(session, tenant_id=tenant_id, username=username)
    user.sip_uri = clean
    await session.flush()
    return user


def normalise_email(email: str) -> str:
    """An address as compared and stored: trimmed, lower-cased; BadRequest if it is not one."""
    clean = email.strip().lower()
    local, _, domain = clean.partition("@")
    if not local or "." not in domain or len(clean) > 320 or any(c.isspace() for c in clean):
        raise BadRequest(f"{email!r} is not an email address")
    return clean


async def set_email(
    session: AsyncSession, *, tenant_id: int, username: str, email: str | None, verified: bool
) -> User:
    """Give ``username`` an email address (None removes it), verified or not."""
    user = await get_user(session, tenant_id=tenant_id, username=username)
    user.email = None if email is None else normalise_email(email)
    user.email_verified = verified and email is not None
    await session.flush()
    return user


async def find_user(session: AsyncSession, *, tenant_id: int, username: str) -> User | None:
    stmt = select(User).where(User.tenant_id == tenant_id, User.username == username)
    return (await session.execute(stmt)).scalar_one_or_none()


# Grants ----------------------------------------------------------------------------------


def parse_scopes(scope: str | None) -> list[str]:
    scopes = list(dict.fromkeys((scope or "openid").split()))
    unknown = [s for s in scopes if s not in SUPPORTED_SCOPES]
    if unknown:
        raise OAuthError("invalid_scope", f"unsupported scope {unknown[0]!r}")
    return scopes


@dataclass(frozen=True, slots=True)
class PasswordCheck:
    """A password verified before the request's write transaction, against the hash stored
    then (``None``: no such user). The verdict is Argon2's for that hash string and that
    password, so it holds for whatever row still stores exactly that string (decision 0032)."""

    stored: str | None
    ok: bool


async def precheck_password(
    db: Database, passwords: Passwords, *, host: str, username: str | None, password: str | None
) -> PasswordCheck | None:
    """Verify ``password`` outside any transaction: one short read of the hash the Host's
    tenant keeps for ``username``, then Argon2 on its own threads (decision 0032). ``None``
    when there is nothing to verify."""
    if not username or password is None:
        return None
    async with db.transaction(read_only=True) as session:
        tenant = await tenants.resolve_host(session, host)
        stored = None
        if tenant is not None:
            stored = await session.scalar(
                select(User.password_hash).where(
                    User.tenant_id == tenant.id, User.username == username
                )
            )
    return PasswordCheck(stored, await passwords.verify(stored, password))


async def check_password(
    session: AsyncSession,
    *,
    tenant: Tenant,
    clock: Clock,
    username: str | None,
    password: str | None,
    max_failures: int,
    lockout_seconds: int,
    passwords: Passwords,
    unknown: lockout.UnknownNames,
    devices: Sequence[lockout.Device] = (),
    checked: PasswordCheck | None = None,
) -> User:
    """The user these credentials name; repeated wrong passwords lock the user out for a while
    (the sign-in page and the password grant share this rule, decision 0006). A username no
    user has is counted and locked the same way, under its keyed hash (``unknown``), so the
    answers do not tell which usernames exist.

    ``devices``: the entries of the browser's device cookie (the login page only, decision
    0031). When one vouches for the user, the attempt is counted against that device and
    refused only while the device is locked; the user's own tally is neither read nor reset.

    ``checked``: the password verified before the transaction (``precheck_password``); taken
    when the user's stored hash is still the one it was checked against, and verified here
    otherwise (the password changed in between, or nothing was checked).

    Failures are flushed before the error is raised: the caller commits them.
    """
    if not username or password is None:
        raise OAuthError("invalid_request", "username and password are required")
    stmt = select(User).where(User.tenant_id == tenant.id, User.username == username)
    user = (await session.execute(stmt)).scalar_one_or_none()
    now = clock.now()
    device = lockout.vouching(devices, user) if user is not None else None
    name_hash = unknown.digest(tenant.id, username) if user is None else ""
    if device is not None:
        locked_until = await lockout.device_locked_until(session, device)
    elif user is not None:
        locked_until = user.locked_until
    else:
        locked_until = await lockout.unknown_locked_until(
            session, tenant_id=tenant.id, name_hash=name_hash
        )
    if locked_until is not None and locked_until > now:
        wait = int((locked_until - now).total_seconds()) + 1
        raise OAuthError(
            "invalid_grant",
            f"too many failed sign-in attempts; try again in {wait} s",
            status=429,
            retry_after=wait,
        )
    stored = user.password_hash if user else None
    if checked is not None and checked.stored == stored:
        ok = checked.ok
    else:
        ok = await passwords.verify(stored, password)
    if user is None or not ok or user.disabled:
        if user is None:
            await lockout.count_unknown_failure(
                session, tenant_id=tenant.id, name_hash=name_hash, now=now,
                max_failures=max_failures, lockout_seconds=lockout_seconds,
            )  # fmt: skip
        elif not ok and device is not None:
            await lockout.count_device_failure(
                session, device, now=now, max_failures=max_failures,
                lockout_seconds=lockout_seconds,
            )  # fmt: skip
        elif not ok:
            await lockout.count_user_failure(
                session, user, now=now, max_failures=max_failures,
                lockout_seconds=lockout_seconds,
            )  # fmt: skip
        await session.flush()
        raise OAuthError("invalid_grant", "invalid username or password")
    if device is not None:
        await lockout.forget_device(session, device)
    elif user.failed_logins or user.locked_until:
        user.failed_logins = 0
        user.locked_until = None
    return user


async def password_grant(
    session: AsyncSession,
    *,
    tenant: Tenant,
    issuer: str,
    tokens: TokenIssuer,
    clock: Clock,
    client: OidcClient,
    username: str | None,
    password: str | None,
    scope: str | None,
    max_failures: int,
    lockout_seconds: int,
    passwords: Passwords,
    unknown: lockout.UnknownNames,
    checked: PasswordCheck | None = None,
) -> TokenSet:
    """Resource-owner password grant, with the lockout of ``check_password``."""
    scopes = parse_scopes(scope)
    user = await check_password(
        session, tenant=tenant, clock=clock, username=username, password=password,
        max_failures=max_failures, lockout_seconds=lockout_seconds, passwords=passwords,
        unknown=unknown, checked=checked,
    )  # fmt: skip
    return await tokens.issue(
        session,
        issuer=issuer,
        tenant_name=tenant.name,
        user=user,
        client_id=client.client_id,
        scopes=scopes,
    )


async def revoke_refresh_family(session: AsyncSession, *, family_id: str, now: dt.datetime) -> None:
    """Revoke every refresh token descended from one sign-in."""
    await session.execute(
        update(RefreshToken)
        .where(RefreshToken.family_id == family_id, RefreshToken.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    await session.flush()


async def revoke_session_tokens(
    session: AsyncSession, *, user_id: int, sid: str, now: dt.datetime
) -> None:
    """Revoke the refresh tokens issued through one browser session (decision 0605)."""
    await session.execute(
        update(RefreshToken)
        .where(
            RefreshToken.user_id == user_id,
            RefreshToken.sid == sid,
            RefreshToken.revoked_at.is_(None),
        )
        .values(revoked_at=now)
    )


async def refresh_grant(
    session: AsyncSession,
    *,
    tenant: Tenant,
    issuer: str,
    tokens: TokenIssuer,
    clock: Clock,
    client: OidcClient,
    refresh_token: str | None,
    scope: str | None,
) -> TokenSet:
    """Rotate a refresh token; presenting a rotated one again revokes its whole family."""
    if not refresh_token:
        raise OAuthError("invalid_request", "refresh_token is required")
    stmt = select(RefreshToken).where(RefreshToken.token_hash == sha256_hex(refresh_token))
    row = (await session.execute(stmt)).scalar_one_or_none()
    now = clock.now()
    if row is None or row.tenant_id != tenant.id or row.client_id != client.client_id:
        raise OAuthError("invalid_grant", "unknown refresh token")
    if row.used_at is not None:
        await revoke_refresh_family(session, family_id=row.family_id, now=now)
        raise OAuthError("invalid_grant", "refresh token reuse detected; the session is revoked")
    if row.revoked_at is not None or row.expires_at <= now:
        raise OAuthError("invalid_grant", "the refresh token has expired or was revoked")
    granted = row.scope.split()
    scopes = parse_scopes(scope) if scope else granted
    if not set(scopes) <= set(granted):
        raise OAuthError("invalid_scope", "cannot widen the scope on refresh")
    user = await session.get(User, row.user_id)
    if user is None or user.disabled:
        raise OAuthError("invalid_grant", "the user is no longer active")
    row.used_at = now
    return await tokens.issue(
        session,
        issuer=issuer,
        tenant_name=tenant.name,
        user=user,
        client_id=client.client_id,
        scopes=scopes,
        family_id=row.family_id,
        sid=row.sid,
        refresh_scope=row.scope,  # the new refresh token keeps the grant's (RFC 6749 §6)
        # the sign-in's time, not the refresh's (OpenID Connect Core 12.2)
        id_claims={"auth_time": int((row.auth_time or row.created_at).timestamp())},
    )


# API keys --------------------------------------------------------------------------------


async def create_api_key(
    session: AsyncSession, *, tenant_id: int, user: User, name: str, clock: Clock
) -> tuple[ApiKey, str]:
    """Mint an ``ak_`` key (256 random bits). The plaintext is returned once, never stored."""
    if user.role != "admin":
        raise Forbidden("only admins can own API keys")
    plaintext = random_token("ak_", 32)
    key = ApiKey(
        id=secrets.token_hex(8),
        tenant_id=tenant_id,
        user_id=user.id,
        name=name[:128],
        prefix=plaintext[:10],
        key_hash=sha256_hex(plaintext),
        created_at=clock.now(),
    )
    session.add(key)
    await session.flush()
    return key, plaintext


def api_keys_statement(tenant_id: int) -> Select[ApiKey, str]:
    """A tenant's keys with their owner's username, oldest first."""
    return (
        select(ApiKey, User.username)
        .join(User, User.id == ApiKey.user_id)
        .where(ApiKey.tenant_id == tenant_id)
        .order_by(ApiKey.created_at, ApiKey.id)
    )


async def list_api_keys(session: AsyncSession, *, tenant_id: int) -> list[tuple[ApiKey, str]]:
    rows = (await session.execute(api_keys_statement(tenant_id))).all()
    return [(key, username) for key, username in rows]


async def revoke_api_key(
    session: AsyncSession, *, tenant_id: int, key_id: str, clock: Clock
) -> ApiKey:
    stmt = select(ApiKey).where(ApiKey.tenant_id == tenant_id, ApiKey.id == key_id)
    key = (await session.execute(stmt)).scalar_one_or_none()
    if key is None:
        raise NotFound(f"no API key {key_id!r}")
    if key.revoked_at is None:
        key.revoked_at = clock.now()
        await session.flush()
        REVOCATIONS.after_commit_of(session)
    return key
