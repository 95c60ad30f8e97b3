"""Tenant rules: creation, Host resolution, settings, the primary tenant."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.kit.crypto import SecretBox, random_token
from switchboard.kit.errors import BadRequest, Conflict, NotFound
from switchboard.tenants import repository
from switchboard.tenants.config import SettingRefused, TenantConfig, check_setting, known_key
from switchboard.tenants.models import Tenant, TenantDomain

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
# A tenant's domain: a host name or a bracketed IPv6 address, with an optional port. The same
# pattern is stated in the OpenAPI document; case, blanks around it and trailing dots of the
# name are normalised away before it is stored.
_H = "[0-9A-Fa-f]{1,4}"
_IPV6 = (
    f"({_H}:){{7}}{_H}|({_H}:){{1,7}}:|({_H}:){{1,6}}:{_H}|({_H}:){{1,5}}(:{_H}){{1,2}}"
    f"|({_H}:){{1,4}}(:{_H}){{1,3}}|({_H}:){{1,3}}(:{_H}){{1,4}}|({_H}:){{1,2}}(:{_H}){{1,5}}"
    f"|{_H}:(:{_H}){{1,6}}|:((:{_H}){{1,7}}|:)"
)
_PORT = "(:([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?"
DOMAIN_PATTERN = rf"^\s*([A-Za-z0-9.-]*[A-Za-z0-9-]\.*{_PORT}|\[({_IPV6})\]{_PORT})\s*$"
DOMAIN_RE = re.compile(DOMAIN_PATTERN)


@dataclass(frozen=True, slots=True)
class TenantRef:
    """What request handling needs to know of a tenant."""

    id: int
    name: str
    primary: bool
    config: TenantConfig

    @classmethod
    def of(cls, tenant: Tenant, *, primary: bool) -> TenantRef:
        return cls(
            id=tenant.id,
            name=tenant.name,
            primary=primary,
            config=TenantConfig.from_settings(tenant.settings),
        )


TenantCreatedHook = Callable[[AsyncSession, Tenant], Awaitable[None]]
_created_hooks: list[TenantCreatedHook] = []


def on_tenant_created(hook: TenantCreatedHook) -> TenantCreatedHook:
    """Register a feature's set-up for every new tenant (runs in the same transaction)."""
    _created_hooks.append(hook)
    return hook


def normalise_host(host: str) -> str:
    return host.strip().lower().rstrip(".")


async def create_tenant(
    session: AsyncSession,
    *,
    name: str,
    domains: list[str],
    clock: Clock,
    box: SecretBox,
) -> Tenant:
    if not NAME_RE.match(name):
        raise BadRequest("tenant name must be 1-63 lowercase letters, digits or dashes")
    if not domains:
        raise BadRequest("a tenant needs at least one domain")
    if await repository.get_by_name(session, name) is not None:
        raise Conflict(f"tenant {name!r} already exists", code="duplicate_tenant")
    clean = await _free_domains(session, domains)
    tenant = Tenant(
        name=name,
        settings={},
        signaling_secret=box.seal(random_token(nbytes=32)),
        created_at=clock.now(),
    )
    session.add(tenant)
    await session.flush()
    for domain in clean:
        session.add(TenantDomain(domain=domain, tenant_id=tenant.id))
    await session.flush()
    for hook in _created_hooks:
        await hook(session, tenant)
    return tenant


async def _free_domains(session: AsyncSession, domains: list[str]) -> list[str]:
    """``domains`` normalised, once each; 400 for one that is no host name, 409 for one that
    maps to a tenant already."""
    clean = list(dict.fromkeys(normalise_host(d) for d in domains))
    for domain in clean:
        if not DOMAIN_RE.match(domain):
            raise BadRequest(f"invalid domain {domain!r}")
        if await repository.domain_taken(session, domain):
            raise Conflict(f"domain {domain!r} already maps to a tenant", code="duplicate_domain")
    return clean


async def add_domains(session: AsyncSession, tenant: Tenant, domains: list[str]) -> list[str]:
    """Map ``domains`` to ``tenant`` too; those it has already are left out. Returns the new
    ones (400 for a malformed one, 409 for another tenant's)."""
    own = set(await repository.domains_of(session, tenant.id))
    new = await _free_domains(session, [d for d in domains if normalise_host(d) not in own])
    for domain in new:
        session.add(TenantDomain(domain=domain, tenant_id=tenant.id))
    await session.flush()
    return new


async def remove_domain(session: AsyncSession, tenant: Tenant, domain: str) -> str:
    """Stop mapping ``domain`` to ``tenant`` (404 when it does not; 400 for its last one)."""
    domain = normalise_host(domain)
    row = await session.get(TenantDomain, domain)
    if row is None or row.tenant_id != tenant.id:
        raise NotFound(f"tenant {tenant.name!r} has no domain {domain!r}")
    if len(await repository.domains_of(session, tenant.id)) == 1:
        raise BadRequest(f"{domain!r} is the last domain of tenant {tenant.name!r}")
    await session.delete(row)
    await session.flush()
    return domain


async def resolve_host(session: AsyncSession, host: str) -> Tenant | None:
    """The tenant a Host header maps to: exact match first, then without the port."""
    host = normalise_host(host)
    tenant = await repository.get_by_domain(session, host)
    if tenant is None and ":" in host and not host.endswith("]"):
        tenant = await repository.get_by_domain(session, host.rsplit(":", 1)[0])
    return tenant


async def get_by_id(session: AsyncSession, tenant_id: int) -> Tenant | None:
    return await repository.get_by_id(session, tenant_id)


async def base_url(session: AsyncSession, tenant_id: int, scheme: str) -> str:
    """``scheme://first domain`` of a tenant: where its public pages live."""
    domains = await repository.domains_of(session, tenant_id)
    return f"{scheme}://{domains[0]}"


async def require_by_name(session: AsyncSession, name: str) -> Tenant:
    tenant = await repository.get_by_name(session, name)
    if tenant is None:
        raise NotFound(f"no tenant named {name!r}")
    return tenant


def parse_setting(key: str, value: str) -> Any:
    """The value to store for a setting: the key must be known and the value follow the key's
    rule (the same as a call's field of that name); tunables snap to their bounds."""
    if not known_key(key):
        raise BadRequest(f"unknown setting {key!r}")
    try:
        return check_setting(key, value)
    except SettingRefused as exc:
        raise BadRequest(str(exc)) from None


async def set_setting(session: AsyncSession, tenant: Tenant, key: str, value: str) -> Any:
    """Store one setting; a refused value is BadRequest and nothing is stored."""
    parsed = parse_setting(key, value)
    tenant.settings = {**(tenant.settings or {}), key: parsed}
    await session.flush()
    return parsed


async def is_primary(session: AsyncSession, tenant_id: int, primary_domain: str) -> bool:
    primary = await resolve_host(session, primary_domain)
    return primary is not None and primary.id == tenant_id
