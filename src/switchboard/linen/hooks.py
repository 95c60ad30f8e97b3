"""Calls a lower linen feature makes into the features built on it, registered by them.

The linen features import only those below them (docs/architecture.md). Where a lower one
must still reach one above, it declares a ``Hook`` and the feature above registers its
function there when its service is loaded: the open sheets follow the item types and price
lists (``figures``), a group's members are checked against the properties (``groups.service.
MEMBERS``), and a delete refused while the row is in use names what uses it (a ``Uses``: an
item type's par levels, price lists and sheets, a property's sheets, invoices and vault
entries, a laundry's sheets and invoices, a group's vault entries). A hook called
before it is registered raises, rather than skip the check or leave the figures stale; the
portal's API, its web app and its demo data each load every service that registers one.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

F = TypeVar("F")

_DECLARED: list[Hook[Any]] = []


class Hook(Generic[F]):
    """One call into the feature ``by`` (its package under ``switchboard.linen``), for
    ``what``; ``by``'s service registers the function."""

    def __init__(self, what: str, *, by: str) -> None:
        self.what = what
        self.by = by
        self._function: F | None = None
        _DECLARED.append(self)

    def register(self, function: F) -> None:
        self._function = function

    @property
    def registered(self) -> bool:
        return self._function is not None

    def __call__(self) -> F:
        """The registered function; raises when ``by``'s service is not loaded."""
        if self._function is None:
            raise RuntimeError(f"{self.what}: switchboard.linen.{self.by}.service is not loaded")
        return self._function


def unregistered() -> list[str]:
    """The hooks declared by the services loaded so far that no service has registered."""
    return [f"{hook.by}: {hook.what}" for hook in _DECLARED if not hook.registered]


class Finder(Protocol):
    """What of one feature uses row ``row_id`` of the tenant, described for a refusal."""

    def __call__(
        self, session: AsyncSession, *, tenant_id: int, row_id: int
    ) -> Awaitable[list[str]]: ...


class Uses:
    """What may still use a row of one kind (``what``, "an item type"): one hook per feature
    built on it, in the order a refused delete names what they hold."""

    def __init__(self, what: str, *users: str) -> None:
        self.hooks = {user: Hook[Finder](f"the uses of {what}", by=user) for user in users}

    def register(self, user: str, finder: Finder) -> None:
        self.hooks[user].register(finder)

    async def of(self, session: AsyncSession, *, tenant_id: int, row_id: int) -> list[str]:
        """Everything that uses the row, feature by feature."""
        found: list[str] = []
        for hook in self.hooks.values():
            found += await hook()(session, tenant_id=tenant_id, row_id=row_id)
        return found
