"""The open sheets' figures follow the item types and price lists they are computed from.

The sheets are built on item types and laundries (the sheets' service imports theirs), so a
change to an item type or a price list does not call the sheets: it is reported here, and the
refresh that the sheets' service registers when it is loaded (``sheets.service.
refresh_figures``) recomputes, in the caller's transaction, the open sheets it reaches.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Collection
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.linen.hooks import Hook


class Refresh(Protocol):
    """Recompute the open sheets a change of prices (a laundry's, for service dates
    ``start..end``) or of item types (sheets with a line of one of ``item_type_ids``) reaches;
    the count changed."""

    def __call__(
        self,
        session: AsyncSession,
        *,
        tenant_id: int,
        clock: Clock,
        laundry_id: int | None = None,
        start: dt.date | None = None,
        end: dt.date | None = None,
        item_type_ids: Collection[int] | None = None,
    ) -> Awaitable[int]: ...


_refresh = Hook[Refresh]("the open sheets following their item types and prices", by="sheets")


def follow(refresh: Refresh) -> None:
    """Register the refresh the changes lead to (the sheets' service, once it is loaded)."""
    _refresh.register(refresh)


async def changed(
    session: AsyncSession,
    *,
    tenant_id: int,
    clock: Clock,
    laundry_id: int | None = None,
    start: dt.date | None = None,
    end: dt.date | None = None,
    item_type_ids: Collection[int] | None = None,
) -> int:
    """Item types or a laundry's prices changed: the open sheets they reach follow. Raises
    when no refresh is registered, rather than leave the sheets' figures stale."""
    return await _refresh()(
        session, tenant_id=tenant_id, clock=clock, laundry_id=laundry_id, start=start, end=end,
        item_type_ids=item_type_ids,
    )  # fmt: skip
