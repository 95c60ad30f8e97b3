"""The rules of federation's providers: adding, changing, enabling and removing a tenant's
external OpenID Connect providers, and their client secrets. Signing in at one is
``signin.py``."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import ROLES
from switchboard.identity.federation import repository
from switchboard.identity.federation.models import (
    FIRST_LOGIN,
    ExternalProvider,
)
from switchboard.identity.federation.secrets import (
    MAX_SECRET_LENGTH,
    ClientSecret,
    ClientSecrets,
    Keep,
    SecretReference,
    SecretUnavailable,
    SecretValue,
)
from switchboard.kit.errors import BadRequest, Conflict, NotFound
from switchboard.tenants.config import secure_url
from switchboard.tenants.models import Tenant

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
CLAIM_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
DEFAULT_SCOPES = "openid email profile"


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """What an admin gives for a provider. ``secret``: the value (sealed at rest), the
    operator's reference (``env:NAME``/``file:/path``), None for a public client, or KEEP on an
    update."""

    name: str
    issuer: str
    client_id: str
    secret: ClientSecret | Keep = None
    display_name: str = ""
    scopes: str = DEFAULT_SCOPES
    username_claim: str = "preferred_username"
    role_claim: str | None = None
    default_role: str = "user"
    allowed_domains: tuple[str, ...] = ()
    first_login: str = "refuse"


def _check_issuer(issuer: str) -> str:
    try:
        return secure_url(issuer)
    except ValueError as exc:
        raise BadRequest(f"issuer {exc}") from None


def _check_spec(spec: ProviderSpec) -> None:
    if not NAME_RE.match(spec.name):
        raise BadRequest("name must be 1-64 of a-z, 0-9 and '-', starting with a letter or digit")
    _check_issuer(spec.issuer)
    if not spec.client_id or len(spec.client_id) > 255:
        raise BadRequest("client id must be 1-255 characters")
    if "openid" not in spec.scopes.split():
        raise BadRequest("scopes must include openid")
    for claim in (spec.username_claim, spec.role_claim):
        if claim is not None and not CLAIM_RE.match(claim):
            raise BadRequest(f"{claim!r} is not a claim name")
    if spec.default_role not in ROLES:
        raise BadRequest(f"default role must be one of {', '.join(ROLES)}")
    if spec.first_login not in FIRST_LOGIN:
        raise BadRequest(f"first-login policy must be one of {', '.join(FIRST_LOGIN)}")
    for domain in spec.allowed_domains:
        if not re.match(r"^[a-z0-9.-]+\.[a-z0-9-]+$", domain):
            raise BadRequest(f"{domain!r} is not a lower-case domain name")


def _check_secret(
    secret: ClientSecret | Keep, *, client_secrets: ClientSecrets, operator: bool
) -> None:
    if isinstance(secret, SecretValue):
        if not secret.value or len(secret.value) > MAX_SECRET_LENGTH:
            raise BadRequest(f"the client secret must be 1-{MAX_SECRET_LENGTH} characters")
        if not secret.value.isprintable():
            raise BadRequest("the client secret has no control characters")
    elif isinstance(secret, SecretReference):
        if not operator:
            # Naming what the server reads is the operator's: a tenant's admin who could name a
            # variable or a file would have the server send it to a token endpoint of their own.
            raise BadRequest("only the operator sets where a client secret is read from")
        problem = client_secrets.problem(secret.source)
        if problem is not None:
            raise BadRequest(problem)


def _store_secret(
    row: ExternalProvider, secret: ClientSecret, client_secrets: ClientSecrets
) -> None:
    row.secret_sealed = (
        client_secrets.seal(secret.value) if isinstance(secret, SecretValue) else None
    )
    row.secret_source = secret.source if isinstance(secret, SecretReference) else None


async def add_provider(
    session: AsyncSession,
    *,
    tenant: Tenant,
    spec: ProviderSpec,
    client_secrets: ClientSecrets,
    now: dt.datetime,
    operator: bool = False,
) -> ExternalProvider:
    """Add a provider; ``operator``: the caller is the operator (the CLI), who alone may name
    where the client secret is read from."""
    _check_spec(spec)
    if isinstance(spec.secret, Keep):
        raise BadRequest("a new provider has a client secret or none")
    _check_secret(spec.secret, client_secrets=client_secrets, operator=operator)
    if await repository.find_provider(session, tenant_id=tenant.id, name=spec.name):
        raise Conflict(f"provider {spec.name!r} already exists", code="duplicate_provider")
    row = ExternalProvider(
        tenant_id=tenant.id, name=spec.name, display_name=spec.display_name or spec.name,
        issuer=spec.issuer, client_id=spec.client_id,
        scopes=" ".join(dict.fromkeys(spec.scopes.split())), username_claim=spec.username_claim,
        role_claim=spec.role_claim, default_role=spec.default_role,
        allowed_domains=sorted(set(spec.allowed_domains)), first_login=spec.first_login,
        enabled=True, created_at=now,
    )  # fmt: skip
    _store_secret(row, spec.secret, client_secrets)
    session.add(row)
    await session.flush()
    return row


async def require_provider(session: AsyncSession, *, tenant: Tenant, name: str) -> ExternalProvider:
    row = await repository.find_provider(session, tenant_id=tenant.id, name=name)
    if row is None:
        raise NotFound(f"no provider {name!r}")
    return row


async def update_provider(
    session: AsyncSession,
    *,
    tenant: Tenant,
    spec: ProviderSpec,
    client_secrets: ClientSecrets,
    operator: bool = False,
) -> ExternalProvider:
    """Change provider ``spec.name`` to ``spec`` (checked as for a new one); its links stay."""
    _check_spec(spec)
    _check_secret(spec.secret, client_secrets=client_secrets, operator=operator)
    row = await require_provider(session, tenant=tenant, name=spec.name)
    if isinstance(spec.secret, Keep):
        if not operator and row.secret_source is not None and spec.issuer != row.issuer:
            # The operator's secret goes to this issuer's token endpoint only.
            raise BadRequest(
                "the client secret is set by the operator: to change the issuer, "
                "enter the new provider's client secret (or none)"
            )
    else:
        _store_secret(row, spec.secret, client_secrets)
    row.display_name = spec.display_name or spec.name
    row.issuer, row.client_id = spec.issuer, spec.client_id
    row.scopes = " ".join(dict.fromkeys(spec.scopes.split()))
    row.username_claim, row.role_claim = spec.username_claim, spec.role_claim
    row.default_role, row.first_login = spec.default_role, spec.first_login
    row.allowed_domains = sorted(set(spec.allowed_domains))
    await session.flush()
    return row


def secret_kind(row: ExternalProvider) -> str:
    """How the provider's client secret is kept: sealed, env, file or none (never where)."""
    if row.secret_sealed is not None:
        return "sealed"
    if row.secret_source is not None:
        return row.secret_source.partition(":")[0]
    return "none"


def secret_problem(row: ExternalProvider, client_secrets: ClientSecrets) -> str | None:
    """Why the provider's client secret will not be used at sign-in: a reference outside the
    operator's boundary, or a sealed value that does not open (None: it will be used)."""
    if row.secret_sealed is not None:
        try:
            client_secrets.read(sealed=row.secret_sealed, source=None)
        except SecretUnavailable as exc:
            return exc.description
        return None
    return None if row.secret_source is None else client_secrets.problem(row.secret_source)


async def set_enabled(
    session: AsyncSession, *, tenant: Tenant, name: str, enabled: bool
) -> ExternalProvider:
    row = await require_provider(session, tenant=tenant, name=name)
    row.enabled = enabled
    await session.flush()
    return row


async def remove_provider(session: AsyncSession, *, tenant: Tenant, name: str) -> None:
    """Delete the provider with its links (its users stay, signing in by other means)."""
    await session.delete(await require_provider(session, tenant=tenant, name=name))
    await session.flush()
