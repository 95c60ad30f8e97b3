"""All SQL for transcripts; every query starts from the tenant-scoped base statement.

A list answers from at most three statements (docs/decisions/0402-transcript-list-bounded.md):

1. ``capped``: the first ``TOTAL_CAP + 1`` matches in any order, counted, and the page cut from
   them. With at most ``TOTAL_CAP`` matches that is the whole answer, `total` exact.
2. ``walk``: more matches than that, so they are dense among recent rows: the (tenant, started)
   index is walked newest first for at most ``WALK_ROWS`` rows, testing each, until the page
   and one more match are found.
3. ``sorted``: the walk ran out first (deep pages, or matches that are all old): every match
   is sorted by start time, as a list without the cap would.

PostgreSQL tries the walk first, counting what it meets: a common term is then settled without
the GIN index, which reads every match.

A ``q`` of one or two characters has no trigram to look up: it searches the newest
``SHORT_QUERY_WINDOW`` transcripts of the tenant only, with an exact `total` among them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import CTE, Integer, Select, Subquery, column, func, select, table
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.paging import like_pattern
from switchboard.platform.transcripts.models import OUTBOUND_SOURCE, Transcript


@dataclass(frozen=True, slots=True)
class TranscriptFilter:
    """What a list keeps: one caller source, a literal ``q`` (lower-cased), a start time."""

    source: str | None = None
    q: str | None = None
    since: dt.datetime | None = None


# Below three characters a trigram index cannot help.
MIN_INDEXED_QUERY = 3
# `total` counts at most this many matches; past it the answer says the total is capped.
TOTAL_CAP = 1_000
# The newest-first walk gives up after this many rows of the tenant (then statement 3 runs).
WALK_ROWS = 20_000
# A one- or two-character `q` searches this many of the tenant's newest transcripts.
SHORT_QUERY_WINDOW = 10_000

_S = TypeVar("_S", bound=Select[*tuple[Any, ...]])

NEWEST_FIRST = (Transcript.started_at.desc(), Transcript.id.desc())


@dataclass(frozen=True, slots=True)
class Found:
    """One page of a list: its rows, the total (capped), and whether more follow the page."""

    rows: list[Transcript]
    total: int
    capped: bool
    more: bool


def scoped(tenant_id: int) -> Select[Transcript]:
    return select(Transcript).where(Transcript.tenant_id == tenant_id)


def is_short(q: str | None) -> bool:
    return q is not None and 0 < len(q) < MIN_INDEXED_QUERY


def _keep_source(stmt: _S, column: Any, source: str | None) -> _S:
    """``stmt`` keeping outbound calls (``outbound-ai``), inbound ones (``vnum``), or both."""
    if source == OUTBOUND_SOURCE:
        return stmt.where(column == OUTBOUND_SOURCE)
    if source == "vnum":
        return stmt.where(column != OUTBOUND_SOURCE)
    return stmt


FTS = table("transcripts_fts", column("rowid", Integer), column("transcripts_fts"))


def _since(stmt: _S, filter: TranscriptFilter) -> _S:
    return stmt if filter.since is None else stmt.where(Transcript.started_at >= filter.since)


def filtered(tenant_id: int, filter: TranscriptFilter, dialect: str) -> Select[Transcript]:
    """Every match, ``q`` looked up in the trigram index (a short ``q``: see ``window``)."""
    stmt = _keep_source(_since(scoped(tenant_id), filter), Transcript.caller_source, filter.source)
    if not filter.q:
        return stmt
    if dialect == "sqlite":
        # The FTS5 trigram table drives the join, so a limit stops it after that many matches.
        phrase = '"' + filter.q.replace('"', '""') + '"'
        return stmt.join(FTS, FTS.c.rowid == Transcript.id).where(
            FTS.c.transcripts_fts.op("MATCH")(phrase)
        )
    # PostgreSQL: the pg_trgm GIN index serves LIKE; backslash is its default escape.
    return stmt.where(Transcript.search_text.like(like_pattern(filter.q)))


def _tests(stmt: Select[Any], columns: Any, filter: TranscriptFilter, dialect: str) -> Select[Any]:
    """``stmt`` keeping the rows that pass ``source`` and ``q``, each row tested on its own
    (no trigram index)."""
    stmt = _keep_source(stmt, columns.caller_source, filter.source)
    if not filter.q:
        return stmt
    if dialect == "sqlite":
        return stmt.where(columns.search_text.like(like_pattern(filter.q), escape="\\"))
    # strpos keeps the PostgreSQL planner off the GIN index, whose walk costs more than
    # reading the rows.
    return stmt.where(func.strpos(columns.search_text, filter.q) > 0)


def window(tenant_id: int, filter: TranscriptFilter, dialect: str, *, rows: int) -> Subquery:
    """``id`` and ``started_at`` of the matches among the tenant's newest ``rows`` transcripts
    (from ``since`` on), newest first. PostgreSQL streams it, so a limit on it stops early;
    SQLite reads all ``rows`` before an outer sort (see ``walk_statement``)."""
    newest = _since(
        scoped(tenant_id).with_only_columns(
            Transcript.id, Transcript.started_at, Transcript.caller_source, Transcript.search_text
        ),
        filter,
    )
    inner = newest.order_by(*NEWEST_FIRST).limit(rows).subquery("newest")
    found = select(inner.c.id, inner.c.started_at)
    return _tests(found, inner.c, filter, dialect).subquery("window")


def _from_floor(tenant_id: int, filter: TranscriptFilter, dialect: str, *, rows: int) -> Any:
    """Like ``window`` for SQLite, as a range of the (tenant, started) index that a
    newest-first limit stops early: the rows started no earlier than the ``rows``-th newest
    (an index-only walk of ``rows`` entries finds that start time; with fewer rows, the
    oldest's)."""
    starts = _since(scoped(tenant_id).with_only_columns(Transcript.started_at), filter)
    floor = func.coalesce(
        starts.order_by(*NEWEST_FIRST).offset(rows - 1).limit(1).scalar_subquery(),
        starts.with_only_columns(func.min(Transcript.started_at)).scalar_subquery(),
    )
    stmt = _since(scoped(tenant_id), filter).where(Transcript.started_at >= floor)
    return _tests(stmt, Transcript, filter, dialect).with_only_columns(
        Transcript.id, Transcript.started_at
    )


def _matches(tenant_id: int, filter: TranscriptFilter, dialect: str) -> Select[int, dt.datetime]:
    """``id`` and ``started_at`` of every match, in no particular order (a short ``q``: of
    every match among the newest ``SHORT_QUERY_WINDOW`` transcripts)."""
    if is_short(filter.q):
        newest = window(tenant_id, filter, dialect, rows=SHORT_QUERY_WINDOW)
        return select(newest.c.id, newest.c.started_at)
    matches = filtered(tenant_id, filter, dialect).with_only_columns(
        Transcript.id, Transcript.started_at
    )
    if filter.q and dialect == "postgresql":
        # Filter first: a materialised CTE keeps the planner from walking the (tenant, started)
        # index backwards and testing every row, which it picks when it overestimates the
        # matches of a rare substring. The CTE yields its rows lazily: a limit stops it early.
        fenced = matches.cte("matches").prefix_with("MATERIALIZED")
        return select(fenced.c.id, fenced.c.started_at)
    return matches


def _capped(tenant_id: int, filter: TranscriptFilter, dialect: str) -> CTE:
    """The first ``TOTAL_CAP + 1`` matches (``id``, ``started_at``) in no particular order."""
    return _matches(tenant_id, filter, dialect).limit(TOTAL_CAP + 1).cte("capped")


def _rows(tenant_id: int, page_ids: Select[Any]) -> Select[Any]:
    """The page's rows, newest first: ids are sorted and cut first, then whole rows loaded."""
    return scoped(tenant_id).where(Transcript.id.in_(page_ids)).order_by(*NEWEST_FIRST)


def count_statement(tenant_id: int, filter: TranscriptFilter, dialect: str) -> Select[Any]:
    """The number of matches, counted up to ``TOTAL_CAP + 1``."""
    return select(func.count()).select_from(_capped(tenant_id, filter, dialect))


def capped_statement(
    tenant_id: int, filter: TranscriptFilter, dialect: str, *, limit: int, offset: int
) -> Select[Any]:
    """Statement 1: the page cut from the capped matches, each row carrying their count."""
    capped = _capped(tenant_id, filter, dialect)
    count = select(func.count()).select_from(capped).scalar_subquery()
    page_ids = (
        select(capped.c.id)
        .order_by(capped.c.started_at.desc(), capped.c.id.desc())
        .limit(limit)
        .offset(offset)
    )
    return _rows(tenant_id, page_ids).add_columns(count.label("total"))


def walk_statement(
    tenant_id: int,
    filter: TranscriptFilter,
    dialect: str,
    *,
    limit: int,
    offset: int,
    count: bool = False,
) -> Select[Any]:
    """Statement 2: the page and one more match, found among the newest ``WALK_ROWS`` rows.

    With ``count``, each row also carries how many matches the walk found, counted up to
    ``TOTAL_CAP + 1`` (the walk then reads on until it has that many): above ``TOTAL_CAP``
    that proves the total capped without the trigram index.
    """
    if is_short(filter.q):
        found = window(tenant_id, filter, dialect, rows=min(WALK_ROWS, SHORT_QUERY_WINDOW))
    elif dialect == "sqlite":
        found = _from_floor(tenant_id, filter, dialect, rows=WALK_ROWS).subquery("walk")
    else:
        found = window(tenant_id, filter, dialect, rows=WALK_ROWS)
    wanted = max(TOTAL_CAP, offset + limit) + 1 if count else offset + limit + 1
    newest = (
        select(found.c.id, found.c.started_at)
        .order_by(found.c.started_at.desc(), found.c.id.desc())
        .limit(wanted)
        .cte("newest")
    )
    page_ids = (
        select(newest.c.id)
        .order_by(newest.c.started_at.desc(), newest.c.id.desc())
        .limit(limit + 1)
        .offset(offset)
    )
    stmt = _rows(tenant_id, page_ids)
    if count:
        stmt = stmt.add_columns(select(func.count()).select_from(newest).scalar_subquery())
    return stmt


def sorted_statement(
    tenant_id: int, filter: TranscriptFilter, dialect: str, *, limit: int, offset: int
) -> Select[Any]:
    """Statement 3: the page and one more match, every match sorted by start time."""
    matches = _matches(tenant_id, filter, dialect).subquery("matches")
    page_ids = (
        select(matches.c.id)
        .order_by(matches.c.started_at.desc(), matches.c.id.desc())
        .limit(limit + 1)
        .offset(offset)
    )
    return _rows(tenant_id, page_ids)


async def page(
    session: AsyncSession, *, tenant_id: int, filter: TranscriptFilter, limit: int, offset: int
) -> Found:
    dialect = session.get_bind().dialect.name
    walked: list[Transcript] | None = None
    if dialect == "postgresql":
        # The GIN index reads every match of a common term (tens of ms at 66,000), the walk
        # only the newest rows: try the walk first, the index only when it does not settle it.
        stmt = walk_statement(tenant_id, filter, dialect, limit=limit, offset=offset, count=True)
        result = (await session.execute(stmt)).all()
        walked = [row for row, _ in result]
        if result and result[0][1] > TOTAL_CAP:
            return await _capped_page(session, tenant_id, filter, dialect, limit, offset, walked)
    first = capped_statement(tenant_id, filter, dialect, limit=limit, offset=offset)
    result = (await session.execute(first)).all()
    if result:
        total = int(result[0][1])
    elif offset == 0:
        total = 0
    else:  # a page past the end carries no count: ask for it alone
        total = int(await session.scalar(count_statement(tenant_id, filter, dialect)) or 0)
    if total <= TOTAL_CAP:
        rows = [row for row, _ in result]
        return Found(rows=rows, total=total, capped=False, more=offset + limit < total)
    return await _capped_page(session, tenant_id, filter, dialect, limit, offset, walked)


async def _capped_page(
    session: AsyncSession,
    tenant_id: int,
    filter: TranscriptFilter,
    dialect: str,
    limit: int,
    offset: int,
    walked: list[Transcript] | None,
) -> Found:
    """The page when more than ``TOTAL_CAP`` match: from the walk, else from sorting them."""
    if walked is None:
        stmt = walk_statement(tenant_id, filter, dialect, limit=limit, offset=offset)
        walked = list((await session.execute(stmt)).scalars())
    found = walked
    if len(found) <= limit:
        stmt = sorted_statement(tenant_id, filter, dialect, limit=limit, offset=offset)
        found = list((await session.execute(stmt)).scalars())
    return Found(rows=found[:limit], total=TOTAL_CAP, capped=True, more=len(found) > limit)


async def get_by_call_id(
    session: AsyncSession, *, tenant_id: int, call_id: str
) -> Transcript | None:
    stmt = scoped(tenant_id).where(Transcript.call_id == call_id)
    return (await session.execute(stmt)).scalar_one_or_none()


def add(session: AsyncSession, row: Transcript) -> None:
    session.add(row)


async def files_of_calls(session: AsyncSession, *, tenant_id: int, call_ids: list[str]) -> set[str]:
    """The file names indexed for these calls (at most one per call)."""
    stmt = (
        scoped(tenant_id).where(Transcript.call_id.in_(call_ids)).with_only_columns(Transcript.file)
    )
    return set((await session.execute(stmt)).scalars())
