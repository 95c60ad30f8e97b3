"""All SQL of the routing tables; every query starts from a tenant-scoped base statement."""

from __future__ import annotations

import secrets
from typing import Any, Literal
from typing import cast as sa_cast

import orjson
from sqlalchemy import CursorResult, Select, Text, and_, bindparam, case, cast, func, select, update
from sqlalchemy import Table as SaTable
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session as SyncSession

from switchboard.platform.routing.models import InboundRoute, OutboundRoute, RoutingRevision

CATCHALL = "*"
Table = Literal["inbound", "outbound"]

_is_catchall = and_(InboundRoute.did == CATCHALL, InboundRoute.from_number == "")
_catchall_last = case((_is_catchall, 1), else_=0)


def _inbound(tenant_id: int) -> Select[InboundRoute]:
    """The tenant's inbound rows in evaluation order: by position, the catchall last."""
    return (
        select(InboundRoute)
        .where(InboundRoute.tenant_id == tenant_id)
        .order_by(_catchall_last, InboundRoute.position, InboundRoute.id)
    )


def _outbound(tenant_id: int) -> Select[OutboundRoute]:
    """The tenant's outbound rows in evaluation order."""
    return (
        select(OutboundRoute)
        .where(OutboundRoute.tenant_id == tenant_id)
        .order_by(OutboundRoute.position, OutboundRoute.id)
    )


# Inbound -------------------------------------------------------------------------------------


async def inbound_rules(session: AsyncSession, tenant_id: int) -> list[tuple[str, str, str]]:
    """(Did, FromNumber, User) in evaluation order: plain columns, no ORM objects, because
    compiling a large table is on the path of the first call after a change."""
    stmt = _inbound(tenant_id).with_only_columns(
        InboundRoute.did, InboundRoute.from_number, InboundRoute.user, maintain_column_froms=True
    )
    return [(r[0], r[1], r[2]) for r in (await session.execute(stmt)).all()]


async def page_inbound(
    session: AsyncSession, tenant_id: int, *, limit: int, offset: int
) -> tuple[list[InboundRoute], int]:
    base = _inbound(tenant_id)
    rows = (await session.execute(base.limit(limit).offset(offset))).scalars()
    total = await session.scalar(select(func.count()).select_from(base.order_by(None).subquery()))
    return list(rows), int(total or 0)


async def first_inbound_with_did(
    session: AsyncSession, tenant_id: int, did: str
) -> InboundRoute | None:
    stmt = _inbound(tenant_id).where(InboundRoute.did == did).limit(1)
    return (await session.execute(stmt)).scalar_one_or_none()


async def first_inbound_with_pair(
    session: AsyncSession, tenant_id: int, did: str, from_number: str
) -> InboundRoute | None:
    stmt = (
        _inbound(tenant_id)
        .where(InboundRoute.did == did, InboundRoute.from_number == from_number)
        .limit(1)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def has_catchall(session: AsyncSession, tenant_id: int) -> bool:
    stmt = _inbound(tenant_id).where(_is_catchall).limit(1)
    return (await session.execute(stmt)).first() is not None


async def next_inbound_position(session: AsyncSession, tenant_id: int) -> int:
    stmt = select(func.max(InboundRoute.position)).where(InboundRoute.tenant_id == tenant_id)
    return int(await session.scalar(stmt) or 0) + 1


async def add_inbound(
    session: AsyncSession, tenant_id: int, *, did: str, from_number: str, user: str
) -> InboundRoute:
    row = InboundRoute(
        tenant_id=tenant_id,
        position=await next_inbound_position(session, tenant_id),
        did=did,
        from_number=from_number,
        user=user,
    )
    session.add(row)
    await session.flush()
    return row


# Outbound ------------------------------------------------------------------------------------


def outbound_rules_now(session: SyncSession, tenant_id: int) -> list[tuple[str, list[Any]]]:
    """(match, trunkIds) in evaluation order, as plain columns; the JSON arrives as text and
    is decoded with orjson, several times faster than the generic JSON column processing."""
    stmt = _outbound(tenant_id).with_only_columns(
        OutboundRoute.match, cast(OutboundRoute.trunk_ids, Text), maintain_column_froms=True
    )
    return [(r[0], orjson.loads(r[1])) for r in session.execute(stmt).all()]


async def outbound_rules(session: AsyncSession, tenant_id: int) -> list[tuple[str, list[Any]]]:
    return await session.run_sync(outbound_rules_now, tenant_id)


async def page_outbound(
    session: AsyncSession, tenant_id: int, *, limit: int, offset: int
) -> tuple[list[OutboundRoute], int]:
    base = _outbound(tenant_id)
    rows = (await session.execute(base.limit(limit).offset(offset))).scalars()
    total = await session.scalar(select(func.count()).select_from(base.order_by(None).subquery()))
    return list(rows), int(total or 0)


async def outbound_with_match(
    session: AsyncSession, tenant_id: int, match: str
) -> OutboundRoute | None:
    stmt = _outbound(tenant_id).where(OutboundRoute.match == match).limit(1)
    return (await session.execute(stmt)).scalar_one_or_none()


async def add_outbound(
    session: AsyncSession, tenant_id: int, *, match: str, trunk_ids: list[str]
) -> OutboundRoute:
    stmt = select(func.max(OutboundRoute.position)).where(OutboundRoute.tenant_id == tenant_id)
    position = int(await session.scalar(stmt) or 0) + 1
    row = OutboundRoute(tenant_id=tenant_id, position=position, match=match, trunk_ids=trunk_ids)
    session.add(row)
    await session.flush()
    return row


# Order ---------------------------------------------------------------------------------------


async def all_inbound(session: AsyncSession, tenant_id: int) -> list[InboundRoute]:
    """Every inbound row in evaluation order (for reordering; tables are operator-sized)."""
    return list((await session.execute(_inbound(tenant_id))).scalars())


async def all_outbound(session: AsyncSession, tenant_id: int) -> list[OutboundRoute]:
    return list((await session.execute(_outbound(tenant_id))).scalars())


# Revisions -----------------------------------------------------------------------------------


# Built once: a statement made per call costs more than the lookup (it is read on every
# resolution, POST /v1/calls included); Core, so no ORM state is set up for one value.
_REVISIONS = sa_cast(SaTable, RoutingRevision.__table__)
_REVISION: dict[Table, Select[tuple[str]]] = {
    table: select(_REVISIONS.c[table]).where(_REVISIONS.c.tenant_id == bindparam("tenant_id"))
    for table in ("inbound", "outbound")
}


def revision_now(session: SyncSession, tenant_id: int, table: Table) -> str:
    """The current revision token of a table ("" before its first change)."""
    found = session.connection().execute(_REVISION[table], {"tenant_id": tenant_id}).scalar()
    return str(found or "")


async def revision(session: AsyncSession, tenant_id: int, table: Table) -> str:
    return await session.run_sync(revision_now, tenant_id, table)


async def bump_revision(session: AsyncSession, tenant_id: int, table: Table) -> str:
    """Replace the table's revision token; holds the row lock until the transaction ends."""
    token = secrets.token_hex(8)
    stmt = (
        update(RoutingRevision)
        .where(RoutingRevision.tenant_id == tenant_id)
        .values({table: token})
        .execution_options(synchronize_session=False)
    )
    result: CursorResult[tuple[()]] = await session.execute(stmt)  # type: ignore[assignment]
    if result.rowcount:
        return token
    try:
        async with session.begin_nested():
            session.add(RoutingRevision(tenant_id=tenant_id, **{table: token}))
    except IntegrityError:  # created by a concurrent writer: take its lock instead
        await session.execute(stmt)
    return token
