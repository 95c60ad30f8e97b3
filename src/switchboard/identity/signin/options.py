"""The login page's other ways to sign in ("Sign in with ..."), registered by the features that
offer them (federation, the wallet), so sign-in imports none of them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.tenants.models import Tenant


@dataclass(frozen=True, slots=True)
class LoginOption:
    """A link on the login page: ``path`` is relative to ``/oidc.ashx/``; the authorization
    request's query string is appended to it."""

    label: str
    path: str


Source = Callable[[AsyncSession, Tenant], Awaitable[list[LoginOption]]]

_sources: list[Source] = []


def register(source: Source) -> Source:
    """Offer what ``source`` lists for a tenant on its login page (in registration order)."""
    _sources.append(source)
    return source


async def for_tenant(session: AsyncSession, tenant: Tenant) -> list[LoginOption]:
    """Every registered option the tenant offers now."""
    found: list[LoginOption] = []
    for source in _sources:
        found.extend(await source(session, tenant))
    return found
