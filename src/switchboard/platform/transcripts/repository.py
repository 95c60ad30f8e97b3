"""All SQL for transcripts; every query starts from the tenant-scoped base statement."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, func, literal_column, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.paging import like_pattern
from switchboard.platform.transcripts.models import OUTBOUND_SOURCE, Transcript

if TYPE_CHECKING:
    from switchboard.platform.transcripts.service import TranscriptFilter

# Below three characters a trigram index cannot help; such queries scan the tenant's rows.
MIN_INDEXED_QUERY = 3


def scoped(tenant_id: int) -> Select[Transcript]:
    return select(Transcript).where(Transcript.tenant_id == tenant_id)


def filtered(tenant_id: int, filter: TranscriptFilter, dialect: str) -> Select[Transcript]:
    stmt = scoped(tenant_id)
    if filter.source == OUTBOUND_SOURCE:
        stmt = stmt.where(Transcript.caller_source == OUTBOUND_SOURCE)
    elif filter.source == "vnum":
        stmt = stmt.where(Transcript.caller_source != OUTBOUND_SOURCE)
    if filter.since is not None:
        stmt = stmt.where(Transcript.started_at >= filter.since)
    if filter.q:
        if dialect == "sqlite" and len(filter.q) >= MIN_INDEXED_QUERY:
            phrase = '"' + filter.q.replace('"', '""') + '"'
            fts: Select[Any] = (
                select(literal_column("rowid"))
                .select_from(text("transcripts_fts"))
                .where(text("transcripts_fts MATCH :phrase").bindparams(phrase=phrase))
            )
            stmt = stmt.where(Transcript.id.in_(fts))
        elif dialect == "sqlite":
            stmt = stmt.where(Transcript.search_text.like(like_pattern(filter.q), escape="\\"))
        elif len(filter.q) >= MIN_INDEXED_QUERY:
            # PostgreSQL: the pg_trgm GIN index serves LIKE; backslash is its default escape.
            stmt = stmt.where(Transcript.search_text.like(like_pattern(filter.q)))
        else:
            # No trigram to look up: strpos keeps the planner off a full walk of the GIN index,
            # which costs far more than scanning the tenant's rows.
            stmt = stmt.where(func.strpos(Transcript.search_text, filter.q) > 0)
    return stmt


def page_statements(
    tenant_id: int, filter: TranscriptFilter, dialect: str, *, limit: int, offset: int
) -> tuple[Select[int], Select[Transcript, int]]:
    """The count query, and the page query that also carries the total in each row.

    The page query computes the total too, so the filter runs once per request; the count
    query is needed only for a page past the end (no row to carry the total).
    """
    base = filtered(tenant_id, filter, dialect)
    if filter.q and dialect == "postgresql":
        # Filter first, then sort: a materialised CTE keeps the planner from walking the
        # (tenant, started) index backwards and testing every row against the pattern, which
        # it picks when it overestimates the matches of a rare substring.
        matches = (
            base.with_only_columns(Transcript.id, Transcript.started_at)
            .cte("matches")
            .prefix_with("MATERIALIZED")
        )
        count = select(func.count()).select_from(matches)
        page_ids = select(matches.c.id).order_by(matches.c.started_at.desc(), matches.c.id.desc())
    else:
        count = select(func.count()).select_from(base.subquery())
        page_ids = base.with_only_columns(Transcript.id).order_by(
            Transcript.started_at.desc(), Transcript.id.desc()
        )
    # Sort and cut the page on ids alone, then load the page's rows: with many matches this
    # avoids sorting whole rows (about half the time of the query at 1M transcripts).
    rows = (
        scoped(tenant_id)
        .add_columns(count.scalar_subquery().label("total"))
        .where(Transcript.id.in_(page_ids.limit(limit).offset(offset)))
        .order_by(Transcript.started_at.desc(), Transcript.id.desc())
    )
    return count, rows


async def page(
    session: AsyncSession, *, tenant_id: int, filter: TranscriptFilter, limit: int, offset: int
) -> tuple[list[Transcript], int]:
    dialect = session.get_bind().dialect.name
    count, rows = page_statements(tenant_id, filter, dialect, limit=limit, offset=offset)
    result = (await session.execute(rows)).all()
    if result:
        return [row for row, _ in result], int(result[0][1])
    total = 0 if offset == 0 else int(await session.scalar(count) or 0)
    return [], total


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
