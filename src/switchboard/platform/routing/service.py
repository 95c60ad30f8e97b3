"""Routing rules: the inbound and outbound tables, and resolving a call against them.

``resolve_inbound`` and ``resolve_outbound`` are what call handling uses. They answer from a
compiled per-tenant index (see ``matching``), cached per database engine and rebuilt when the
table's revision token in the database differs from the one the index was built from, so a
change committed by any process is seen by every other on its next resolution.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session as SyncSession

from switchboard.kit.db import Database
from switchboard.kit.errors import BadRequest, Conflict, NotFound
from switchboard.platform.routing import repository
from switchboard.platform.routing.matching import (
    InboundIndex,
    InboundRule,
    OutboundIndex,
    OutboundRule,
    Pattern,
    caller_value,
    canonical_number,
    is_anonymous_did,
    outbound_pattern,
)
from switchboard.platform.routing.models import InboundRoute, OutboundRoute
from switchboard.platform.routing.repository import CATCHALL, Table
from switchboard.tenants.models import Tenant
from switchboard.tenants.service import on_tenant_created

CATCHALL_USER = "admin"
CACHED_TABLES_PER_ENGINE = 4096
COMPILE_IN_THREAD_ROWS = 5000

AnySession = AsyncSession | SyncSession
IndexT = TypeVar("IndexT", InboundIndex, OutboundIndex)


class _IndexCache(Generic[IndexT]):
    """Compiled indexes per database engine and tenant, tagged with their revision token."""

    def __init__(self) -> None:
        self._engines: weakref.WeakKeyDictionary[Engine, OrderedDict[int, tuple[str, IndexT]]]
        self._engines = weakref.WeakKeyDictionary()
        self._locks: weakref.WeakKeyDictionary[Engine, dict[int, asyncio.Lock]]
        self._locks = weakref.WeakKeyDictionary()
        self._mutex = threading.Lock()

    @staticmethod
    def _engine(session: AnySession) -> Engine | None:
        bind = session.bind
        if isinstance(bind, Engine):  # a synchronous session (``Database.read``)
            return bind
        if bind is None or not hasattr(bind, "sync_engine"):
            return None
        engine: Engine = bind.sync_engine
        return engine

    def _entries(self, session: AnySession) -> OrderedDict[int, tuple[str, IndexT]] | None:
        engine = self._engine(session)
        return None if engine is None else self._engines.setdefault(engine, OrderedDict())

    def compiling(self, session: AsyncSession, tenant_id: int) -> asyncio.Lock:
        """One compile at a time per table: concurrent misses wait and reuse its result."""
        engine = self._engine(session)
        if engine is None:
            return asyncio.Lock()
        return self._locks.setdefault(engine, {}).setdefault(tenant_id, asyncio.Lock())

    def get(self, session: AnySession, tenant_id: int, revision: str) -> IndexT | None:
        return self.get_for(self._engine(session), tenant_id, revision)

    def get_for(self, engine: Engine | None, tenant_id: int, revision: str) -> IndexT | None:
        entries = None if engine is None else self._engines.get(engine)
        with self._mutex:  # also used from ``Database.read``'s threads
            hit = entries.get(tenant_id) if entries is not None else None
            if entries is None or hit is None or hit[0] != revision:
                return None
            entries.move_to_end(tenant_id)
            return hit[1]

    def put(self, session: AnySession, tenant_id: int, revision: str, index: IndexT) -> None:
        entries = self._entries(session)
        if entries is None:
            return
        with self._mutex:
            entries[tenant_id] = (revision, index)
            entries.move_to_end(tenant_id)
            while len(entries) > CACHED_TABLES_PER_ENGINE:
                entries.popitem(last=False)


_inbound_cache: _IndexCache[InboundIndex] = _IndexCache()
_outbound_cache: _IndexCache[OutboundIndex] = _IndexCache()


async def _lock(session: AsyncSession, tenant_id: int, table: Table) -> None:
    """Serialise writers of one tenant's table and invalidate every compiled copy of it."""
    await repository.bump_revision(session, tenant_id, table)


RuleT = TypeVar("RuleT", InboundRule, OutboundRule)
RowT = TypeVar("RowT", InboundRoute, OutboundRoute)


async def _off_loop(build: Callable[[list[RuleT]], IndexT], rules: list[RuleT]) -> IndexT:
    """Compile small tables inline; large ones in a thread so other requests keep running."""
    if len(rules) < COMPILE_IN_THREAD_ROWS:
        return build(rules)
    return await asyncio.to_thread(build, rules)


# The matchers ---------------------------------------------------------------------------------


async def inbound_index(session: AsyncSession, *, tenant_id: int) -> InboundIndex:
    """The tenant's compiled inbound table (with its catchall)."""
    revision = await repository.revision(session, tenant_id, "inbound")
    cached = _inbound_cache.get(session, tenant_id, revision)
    if cached is not None:
        return cached
    if await ensure_catchall(session, tenant_id=tenant_id):
        revision = await repository.revision(session, tenant_id, "inbound")
    async with _inbound_cache.compiling(session, tenant_id):
        cached = _inbound_cache.get(session, tenant_id, revision)
        if cached is not None:
            return cached
        rows = await repository.inbound_rules(session, tenant_id)
        rules = [InboundRule(did, from_number, user) for did, from_number, user in rows]
        index = await _off_loop(InboundIndex, rules)
        _inbound_cache.put(session, tenant_id, revision, index)
    return index


async def outbound_index(session: AsyncSession, *, tenant_id: int) -> OutboundIndex:
    """The tenant's compiled outbound table."""
    revision = await repository.revision(session, tenant_id, "outbound")
    cached = _outbound_cache.get(session, tenant_id, revision)
    if cached is not None:
        return cached
    async with _outbound_cache.compiling(session, tenant_id):
        cached = _outbound_cache.get(session, tenant_id, revision)
        if cached is not None:
            return cached
        rows = await repository.outbound_rules(session, tenant_id)
        rules = [OutboundRule(match, tuple(map(str, trunks))) for match, trunks in rows]
        index = await _off_loop(OutboundIndex, rules)
        _outbound_cache.put(session, tenant_id, revision, index)
    return index


def outbound_index_now(
    session: SyncSession, *, tenant_id: int, revision: str | None = None
) -> OutboundIndex:
    """``outbound_index`` in a synchronous unit of work (``Database.read``): one thread hand-off
    for the whole read on SQLite. A miss compiles in place (it runs off the event loop).
    ``revision``: the outbound table's revision token when the caller has read it already."""
    if revision is None:
        revision = repository.revision_now(session, tenant_id, "outbound")
    cached = _outbound_cache.get(session, tenant_id, revision)
    if cached is None:
        rows = repository.outbound_rules_now(session, tenant_id)
        cached = OutboundIndex(
            [OutboundRule(match, tuple(map(str, trunks))) for match, trunks in rows]
        )
        _outbound_cache.put(session, tenant_id, revision, cached)
    return cached


async def outbound_index_read(db: Database, *, tenant_id: int, revision: str) -> OutboundIndex:
    """``outbound_index_now`` for a caller outside any unit of work that has read the table's
    ``revision``: the cached index when it is current, else one ``Database.read``."""
    cached = _outbound_cache.get_for(db.read_engine, tenant_id, revision)
    if cached is not None:
        return cached
    return await db.read(
        functools.partial(outbound_index_now, tenant_id=tenant_id, revision=revision)
    )


async def resolve_inbound(
    session: AsyncSession, *, tenant_id: int, did: str, from_number: str | None
) -> str:
    """The user whose phone rings for a call to ``did`` from ``from_number``.

    ``None`` or an empty caller ID is ``anonymous``. The catchall row guarantees an answer.
    """
    index = await inbound_index(session, tenant_id=tenant_id)
    rule = index.resolve(did, from_number)
    return rule.user if rule is not None else CATCHALL_USER


async def resolve_outbound(
    session: AsyncSession, *, tenant_id: int, number: str, default_trunk_id: str
) -> list[str]:
    """The trunk ids to try in order for dialling ``number``; ``[default_trunk_id]`` when no
    row matches."""
    index = await outbound_index(session, tenant_id=tenant_id)
    return index.resolve(number, default_trunk_id)


# Dry runs -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InboundResolution:
    did: str
    from_number: str
    index: int | None
    row: InboundRule | None
    user: str
    reason: str


@dataclass(frozen=True, slots=True)
class OutboundResolution:
    number: str
    normalised_number: str
    index: int | None
    row: OutboundRule | None
    trunk_ids: list[str]
    used_default: bool
    reason: str


def _why_inbound(rule: InboundRule, did: str, caller: str) -> str:
    if rule.did == CATCHALL and not rule.from_number:
        return "the catchall '*' matches every call not matched above it"
    if is_anonymous_did(rule.did):
        did_part = f"Did {rule.did!r} matches calls without caller ID"
    else:
        did_part = f"Did {rule.did!r} ({Pattern.compile(rule.did).explain()}) matches {did!r}"
    if not rule.from_number:
        from_part = "no FromNumber filter"
    elif is_anonymous_did(rule.from_number):
        from_part = f"FromNumber {rule.from_number!r} matches the anonymous caller"
    else:
        pattern = Pattern.compile(rule.from_number)
        from_part = f"FromNumber {rule.from_number!r} ({pattern.explain()}) matches {caller!r}"
    return f"{did_part}; {from_part}; no row above it matches"


async def explain_inbound(
    session: AsyncSession, *, tenant_id: int, did: str, from_number: str | None
) -> InboundResolution:
    """Which row a call would ring, its position in evaluation order, and why."""
    index = await inbound_index(session, tenant_id=tenant_id)
    caller = caller_value(from_number)
    position = index.first(did, from_number)
    if position is None:  # only when the catchall was removed behind the service's back
        return InboundResolution(did, caller, None, None, CATCHALL_USER, "no row matches")
    rule = index.rules[position]
    reason = _why_inbound(rule, canonical_number(did), caller)
    return InboundResolution(did, caller, position, rule, rule.user, reason)


async def explain_outbound(
    session: AsyncSession, *, tenant_id: int, number: str, default_trunk_id: str
) -> OutboundResolution:
    """Which row a dialled number would use, its position in evaluation order, and why."""
    index = await outbound_index(session, tenant_id=tenant_id)
    normalised = canonical_number(number)
    position = index.first(number)
    if position is None:
        reason = f"no row matches {normalised!r}; the tenant's defaultTrunkId is used"
        return OutboundResolution(number, normalised, None, None, [default_trunk_id], True, reason)
    rule = index.rules[position]
    reason = (
        f"match {rule.match!r} ({outbound_pattern(rule.match).explain()}) matches "
        f"{normalised!r}; no row above it matches"
    )
    return OutboundResolution(
        number, normalised, position, rule, list(rule.trunk_ids), False, reason
    )


# Inbound table ------------------------------------------------------------------------------


async def ensure_catchall(session: AsyncSession, *, tenant_id: int) -> bool:
    """Insert the catchall row when it is missing; True when it had to be inserted."""
    if await repository.has_catchall(session, tenant_id):
        return False
    await _lock(session, tenant_id, "inbound")
    if await repository.has_catchall(session, tenant_id):
        return False
    await repository.add_inbound(
        session, tenant_id, did=CATCHALL, from_number="", user=CATCHALL_USER
    )
    return True


@on_tenant_created
async def _set_up_tenant(session: AsyncSession, tenant: Tenant) -> None:
    await ensure_catchall(session, tenant_id=tenant.id)
    await _lock(session, tenant.id, "outbound")


async def list_inbound(
    session: AsyncSession, *, tenant_id: int, limit: int, offset: int
) -> tuple[list[InboundRoute], int]:
    await ensure_catchall(session, tenant_id=tenant_id)
    return await repository.page_inbound(session, tenant_id, limit=limit, offset=offset)


async def get_inbound(session: AsyncSession, *, tenant_id: int, did: str) -> InboundRoute:
    """The first row, in evaluation order, whose Did is ``did``."""
    if did == CATCHALL:
        await ensure_catchall(session, tenant_id=tenant_id)
    row = await repository.first_inbound_with_did(session, tenant_id, did)
    if row is None:
        raise NotFound(f"no inbound route for Did {did!r}")
    return row


async def create_inbound(
    session: AsyncSession, *, tenant_id: int, did: str, from_number: str, user: str
) -> InboundRoute:
    """Insert a row just before the catchall; (Did, FromNumber) must be new."""
    await _lock(session, tenant_id, "inbound")
    await ensure_catchall(session, tenant_id=tenant_id)
    if await repository.first_inbound_with_pair(session, tenant_id, did, from_number):
        raise Conflict(
            f"an inbound route for Did {did!r} and FromNumber {from_number!r} exists",
            code="duplicate_route",
        )
    return await repository.add_inbound(
        session, tenant_id, did=did, from_number=from_number, user=user
    )


async def update_inbound(
    session: AsyncSession, *, tenant_id: int, did: str, from_number: str, user: str
) -> InboundRoute:
    """Change the User of the first row keyed (Did, FromNumber)."""
    await _lock(session, tenant_id, "inbound")
    if did == CATCHALL:
        await ensure_catchall(session, tenant_id=tenant_id)
    row = await repository.first_inbound_with_pair(session, tenant_id, did, from_number)
    if row is None:
        raise NotFound(f"no inbound route for Did {did!r} and FromNumber {from_number!r}")
    row.user = user
    await session.flush()
    return row


async def delete_inbound(
    session: AsyncSession, *, tenant_id: int, did: str, from_number: str | None
) -> InboundRoute:
    """Delete the first row with Did ``did`` (and FromNumber ``from_number`` when given)."""
    if did == CATCHALL and not from_number:
        raise BadRequest(
            "the catchall '*' route cannot be deleted; change its User instead",
            code="cannot_delete_catchall",
        )
    await _lock(session, tenant_id, "inbound")
    if from_number is None:
        row = await repository.first_inbound_with_did(session, tenant_id, did)
    else:
        row = await repository.first_inbound_with_pair(session, tenant_id, did, from_number)
    if row is None:
        raise NotFound(f"no inbound route for Did {did!r}")
    await session.delete(row)
    await session.flush()
    return row


# Outbound table -----------------------------------------------------------------------------


async def list_outbound(
    session: AsyncSession, *, tenant_id: int, limit: int, offset: int
) -> tuple[list[OutboundRoute], int]:
    return await repository.page_outbound(session, tenant_id, limit=limit, offset=offset)


async def get_outbound(session: AsyncSession, *, tenant_id: int, match: str) -> OutboundRoute:
    row = await repository.outbound_with_match(session, tenant_id, match)
    if row is None:
        raise NotFound(f"no outbound route with match {match!r}")
    return row


async def create_outbound(
    session: AsyncSession, *, tenant_id: int, match: str, trunk_ids: list[str]
) -> OutboundRoute:
    """Append a row at the end of the table; ``match`` must be new."""
    await _lock(session, tenant_id, "outbound")
    if await repository.outbound_with_match(session, tenant_id, match) is not None:
        raise Conflict(f"an outbound route with match {match!r} exists", code="duplicate_route")
    return await repository.add_outbound(session, tenant_id, match=match, trunk_ids=trunk_ids)


async def update_outbound(
    session: AsyncSession, *, tenant_id: int, match: str, trunk_ids: list[str]
) -> OutboundRoute:
    """Replace a row's trunk ids; its match and position stay."""
    await _lock(session, tenant_id, "outbound")
    row = await get_outbound(session, tenant_id=tenant_id, match=match)
    row.trunk_ids = list(trunk_ids)
    await session.flush()
    return row


async def delete_outbound(session: AsyncSession, *, tenant_id: int, match: str) -> OutboundRoute:
    await _lock(session, tenant_id, "outbound")
    row = await get_outbound(session, tenant_id=tenant_id, match=match)
    await session.delete(row)
    await session.flush()
    return row


# Order ---------------------------------------------------------------------------------------


def _moved(rows: list[RowT], at: int, up: bool) -> list[RowT]:
    other = at - 1 if up else at + 1
    if other < 0 or other >= len(rows):
        return rows
    rows = list(rows)
    rows[at], rows[other] = rows[other], rows[at]
    return rows


async def move_inbound(
    session: AsyncSession, *, tenant_id: int, did: str, from_number: str, up: bool
) -> InboundRoute:
    """Swap the row keyed (Did, FromNumber) with its neighbour above (``up``) or below; the
    catchall stays last and cannot move."""
    if did == CATCHALL and not from_number:
        raise BadRequest("the catchall '*' route is always last", code="cannot_move_catchall")
    await _lock(session, tenant_id, "inbound")
    rows = [
        r for r in await repository.all_inbound(session, tenant_id)
        if not (r.did == CATCHALL and not r.from_number)
    ]  # fmt: skip
    at = next((i for i, r in enumerate(rows) if r.did == did and r.from_number == from_number), -1)
    if at < 0:
        raise NotFound(f"no inbound route for Did {did!r} and FromNumber {from_number!r}")
    for position, row in enumerate(_moved(rows, at, up), start=1):
        row.position = position
    await session.flush()
    return rows[at]


async def move_outbound(
    session: AsyncSession, *, tenant_id: int, match: str, up: bool
) -> OutboundRoute:
    """Swap the row with ``match`` with its neighbour above (``up``) or below."""
    await _lock(session, tenant_id, "outbound")
    rows = await repository.all_outbound(session, tenant_id)
    at = next((i for i, r in enumerate(rows) if r.match == match), -1)
    if at < 0:
        raise NotFound(f"no outbound route with match {match!r}")
    for position, row in enumerate(_moved(rows, at, up), start=1):
        row.position = position
    await session.flush()
    return rows[at]
