"""Signing in at a tenant's external provider, and turning its verified ID token into a local
user per the provider's first-login policy.

A sign-in is three units of work, none of which waits on the provider inside a transaction
(decision 0026): what the network part needs is read, the transaction closes, the provider is
asked, and a new transaction writes the outcome. Managing the providers is ``service.py``.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import ROLES, User
from switchboard.auth.passwords import Passwords
from switchboard.identity import service as identity
from switchboard.identity.federation import broker, repository
from switchboard.identity.federation.models import (
    ExternalIdentity,
    ExternalLogin,
    ExternalProvider,
)
from switchboard.identity.federation.secrets import (
    ClientSecrets,
    SecretUnavailable,
)
from switchboard.identity.signin.service import Refused as Refused
from switchboard.kit.clock import Clock
from switchboard.kit.crypto import SecretBox, random_token, sha256_hex
from switchboard.kit.errors import BadRequest
from switchboard.tenants.models import Tenant

LOGIN_TTL = dt.timedelta(minutes=10)
log = logging.getLogger("switchboard.identity")


@dataclass(frozen=True, slots=True)
class Provider:
    """What talking to a provider needs, read before its transaction closed."""

    id: int
    name: str
    display_name: str
    issuer: str
    client_id: str
    scopes: str
    secret: str | None = field(repr=False)


def _provider(row: ExternalProvider, client_secrets: ClientSecrets) -> Provider:
    """The provider with its client secret. Raises SecretUnavailable (logged for the operator:
    the person signing in is only told that the provider cannot be used)."""
    try:
        secret = client_secrets.read(sealed=row.secret_sealed, source=row.secret_source)
    except SecretUnavailable as exc:
        log.warning(
            "federation: provider %s of tenant %d not used: %s", row.name, row.tenant_id,
            exc.description,
        )  # fmt: skip
        raise
    return Provider(
        id=row.id, name=row.name, display_name=row.display_name, issuer=row.issuer,
        client_id=row.client_id, scopes=row.scopes, secret=secret,
    )  # fmt: skip


def _oauth(provider: Provider, redirect_uri: str, cache: broker.ProviderCache) -> Any:
    return cache.client(
        client_id=provider.client_id,
        secret=provider.secret,
        redirect_uri=redirect_uri,
        scope=provider.scopes,
    )


async def _enabled(session: AsyncSession, *, tenant: Tenant, name: str) -> ExternalProvider:
    provider = await repository.find_provider(session, tenant_id=tenant.id, name=name)
    if provider is None or not provider.enabled:
        raise Refused("this sign-in provider is not offered", status=404)
    return provider


async def offered(
    session: AsyncSession, *, tenant: Tenant, name: str, client_secrets: ClientSecrets
) -> Provider:
    """The enabled provider ``name`` a sign-in starts at, its client secret at hand."""
    row = await _enabled(session, tenant=tenant, name=name)
    try:
        return _provider(row, client_secrets)
    except SecretUnavailable:
        raise Refused(
            f"{row.display_name} cannot be used: its client secret is not available", status=502
        ) from None


@dataclass(frozen=True, slots=True)
class Started:
    """A sign-in sent to the provider: where the browser goes, and what comes back with it."""

    url: str
    state: str = field(repr=False)
    nonce: str = field(repr=False)
    verifier: str = field(repr=False)
    browser_token: str = field(repr=False)


async def authorization(
    provider: Provider, *, redirect_uri: str, cache: broker.ProviderCache, now: dt.datetime
) -> Started:
    """The provider's authorization URL for a new sign-in (its discovery read, or kept)."""
    state, nonce, verifier = (secrets.token_urlsafe(32) for _ in range(3))
    try:
        async with _oauth(provider, redirect_uri, cache) as oauth:
            metadata = await cache.metadata(oauth, provider.issuer, now=int(now.timestamp()))
            url, _ = oauth.create_authorization_url(
                metadata.authorization_endpoint, state=state, nonce=nonce, code_verifier=verifier
            )
    except broker.BrokerError as exc:
        raise Refused(
            f"{provider.display_name} cannot be reached: {exc.description}", status=502
        ) from None
    return Started(str(url), state, nonce, verifier, random_token(nbytes=32))


async def record(
    session: AsyncSession,
    *,
    tenant: Tenant,
    provider: Provider,
    started: Started,
    authorize_query: str,
    box: SecretBox,
    now: dt.datetime,
) -> None:
    """Keep the sign-in ``started`` at ``provider`` (still offered), bound to the browser."""
    row = await _enabled(session, tenant=tenant, name=provider.name)
    if row.id != provider.id:  # removed and added again meanwhile
        raise Refused("this sign-in provider is not offered", status=404)
    session.add(
        ExternalLogin(
            state_hash=sha256_hex(started.state),
            tenant_id=tenant.id,
            provider_id=provider.id,
            browser_hash=sha256_hex(started.browser_token),
            nonce=started.nonce,
            verifier_sealed=box.seal(started.verifier),
            authorize_query=authorize_query,
            expires_at=now + LOGIN_TTL,
        )
    )
    await session.flush()


@dataclass(frozen=True, slots=True)
class Callback:
    state: str | None
    code: str | None
    error: str | None
    iss: str | None
    browser_token: str | None


@dataclass(frozen=True, slots=True)
class Answer:
    """A provider's answer taken for one sign-in (its state spent), to redeem at the provider."""

    provider: Provider
    code: str = field(repr=False)
    nonce: str = field(repr=False)
    verifier: str = field(repr=False)
    authorize_query: str


async def take_answer(
    session: AsyncSession,
    *,
    tenant: Tenant,
    name: str,
    callback: Callback,
    box: SecretBox,
    client_secrets: ClientSecrets,
    now: dt.datetime,
) -> Answer:
    """The provider's answer for a sign-in under way: its state is spent whatever follows (so
    the transaction must commit when this raises Refused, with ``authorize_query`` set once
    known)."""
    row = await repository.find_provider(session, tenant_id=tenant.id, name=name)
    if row is None or not callback.state:
        raise Refused("this sign-in is unknown; please start again", status=400)
    login = await repository.find_login(
        session, tenant_id=tenant.id, provider_id=row.id, state_hash=sha256_hex(callback.state)
    )
    if login is None or login.used_at is not None or login.expires_at <= now:
        raise Refused("this sign-in is unknown, used or expired; please start again", status=400)
    login.used_at = now
    await session.flush()
    try:
        code = _check_answer(row, login, callback)
        try:
            provider = _provider(row, client_secrets)
        except SecretUnavailable:
            raise Refused(
                f"the sign-in with {row.display_name} failed: its client secret is not available"
            ) from None
    except Refused as exc:
        exc.authorize_query = login.authorize_query
        raise
    return Answer(provider, code, login.nonce, box.open(login.verifier_sealed),
                  login.authorize_query)  # fmt: skip


def _check_answer(provider: ExternalProvider, login: ExternalLogin, callback: Callback) -> str:
    """The code of an answer that belongs to this browser and provider. Raises Refused."""
    if not callback.browser_token or sha256_hex(callback.browser_token) != login.browser_hash:
        raise Refused("this sign-in was started in another browser; please start again", status=400)
    if not provider.enabled:
        raise Refused("this sign-in provider is not offered", status=404)
    if callback.iss is not None and callback.iss != provider.issuer:
        # RFC 9207: the answer comes from another issuer than the one we sent the user to.
        raise Refused("the answer comes from an unknown issuer", status=400)
    if callback.error or not callback.code:
        raise Refused(f"{provider.display_name} did not sign you in", status=403)
    return callback.code


async def redeem(
    answer: Answer, *, redirect_uri: str, cache: broker.ProviderCache, clock: Clock
) -> dict[str, Any]:
    """The verified claims of the ID token the answer's code is exchanged for."""
    provider = answer.provider
    try:
        async with _oauth(provider, redirect_uri, cache) as oauth:
            now = int(clock.timestamp())
            metadata = await cache.metadata(oauth, provider.issuer, now=now)
            id_token = await broker.exchange_code(
                oauth, metadata, code=answer.code, verifier=answer.verifier
            )
            return await broker.verify_id_token(
                oauth, metadata, id_token, cache=cache, client_id=provider.client_id,
                nonce=answer.nonce, now=now,
            )  # fmt: skip
    except broker.BrokerError as exc:
        refusal = Refused(f"the sign-in with {provider.display_name} failed: {exc.description}")
        refusal.authorize_query = answer.authorize_query
        raise refusal from None


async def finish(
    session: AsyncSession,
    *,
    tenant: Tenant,
    answer: Answer,
    claims: dict[str, Any],
    passwords: Passwords,
    clock: Clock,
) -> User:
    """The local user the verified claims sign in (linked or created per the policy)."""
    try:
        row = await _enabled(session, tenant=tenant, name=answer.provider.name)
        if row.id != answer.provider.id:
            raise Refused("this sign-in provider is not offered", status=404)
        return await _local_user(
            session, tenant=tenant, provider=row, claims=claims, passwords=passwords, clock=clock
        )
    except Refused as exc:
        exc.authorize_query = answer.authorize_query
        raise


def _email(provider: ExternalProvider, claims: dict[str, Any]) -> str | None:
    """The verified address of the claims when the provider's rules need or allow one."""
    email = claims.get("email")
    verified = claims.get("email_verified") is True
    if not isinstance(email, str) or not email:
        if provider.allowed_domains:
            raise Refused("your account has no email address of an allowed domain")
        return None
    domain = email.rpartition("@")[2].lower()
    if provider.allowed_domains and (not verified or domain not in provider.allowed_domains):
        raise Refused("your account's email address is not of an allowed domain (or unverified)")
    return email.lower() if verified else None


def _role(provider: ExternalProvider, claims: dict[str, Any]) -> str | None:
    if provider.role_claim is None:
        return None
    value = claims.get(provider.role_claim)
    values = value if isinstance(value, list) else [value]
    return next((role for role in ROLES if role in values), None)


async def _local_user(
    session: AsyncSession,
    *,
    tenant: Tenant,
    provider: ExternalProvider,
    claims: dict[str, Any],
    passwords: Passwords,
    clock: Clock,
) -> User:
    subject = str(claims["sub"])
    verified_email = _email(provider, claims)
    role = _role(provider, claims)
    user = await repository.find_linked_user(
        session, tenant_id=tenant.id, provider_id=provider.id, subject=subject
    )
    if user is None:
        user = await _first_login(
            session, tenant=tenant, provider=provider, claims=claims, email=verified_email,
            role=role, passwords=passwords, clock=clock,
        )  # fmt: skip
        session.add(
            ExternalIdentity(
                tenant_id=tenant.id,
                provider_id=provider.id,
                subject=subject,
                user_id=user.id,
                created_at=clock.now(),
            )
        )
    elif role is not None:
        user.role = role  # the provider's mapped claim is authoritative at every sign-in
    if user.disabled:
        raise Refused("your account is disabled")
    await session.flush()
    return user


async def _first_login(
    session: AsyncSession,
    *,
    tenant: Tenant,
    provider: ExternalProvider,
    claims: dict[str, Any],
    email: str | None,
    role: str | None,
    passwords: Passwords,
    clock: Clock,
) -> User:
    if provider.first_login == "refuse":
        raise Refused("no account here is linked to your account; ask an administrator")
    if provider.first_login == "link-by-verified-email":
        if email is None:
            raise Refused("your account has no verified email address to link by")
        found = await repository.find_user_by_verified_email(
            session, tenant_id=tenant.id, email=email
        )
        if len(found) != 1:
            raise Refused("no single account here has your verified email address")
        return found[0]
    username = claims.get(provider.username_claim)
    if not isinstance(username, str) or not username:
        raise Refused(f"your account has no {provider.username_claim!r} to name you by")
    if await repository.find_user_by_username(session, tenant_id=tenant.id, username=username):
        # Never take over an existing account by name: an administrator links it by email.
        raise Refused(f"the username {username!r} is taken here; ask an administrator")
    try:
        user = await identity.create_user(
            session, tenant=tenant, username=username, password=None,  # the provider signs in
            role=role or provider.default_role, clock=clock, passwords=passwords,
        )  # fmt: skip
    except BadRequest as exc:
        raise Refused(exc.description) from None
    user.email, user.email_verified = email, email is not None
    return user
