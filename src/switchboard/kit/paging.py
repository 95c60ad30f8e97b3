"""Paging query parameters and the ``next`` link of the collection envelope."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import Depends, Query, Request
from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

MAX_LIMIT = 500
DEFAULT_LIMIT = 50
MAX_OFFSET = 2**31 - 1


@dataclass(frozen=True, slots=True)
class PageParams:
    limit: int
    offset: int
    path: str
    query: tuple[tuple[str, str], ...]

    def next_url(self, total: int) -> str | None:
        """Relative URL of the next page, or None on the last page."""
        following = self.offset + self.limit
        if following >= total:
            return None
        items = [(k, v) for k, v in self.query if k not in ("offset", "limit")]
        items += [("limit", str(self.limit)), ("offset", str(following))]
        return f"{self.path}?{urlencode(items)}"

    def next_offset(self, total: int) -> int | None:
        following = self.offset + self.limit
        return following if following < total else None

    def envelope(self, total: int, *, integer_next: bool = False) -> dict[str, Any]:
        """The envelope fields besides ``data``: ``Page(data=items, **paging.envelope(total))``.

        ``integer_next`` gives ``next`` as an offset (the transcript list's quirk, spec 2.1).
        """
        following = self.next_offset(total) if integer_next else self.next_url(total)
        return {"total": total, "limit": self.limit, "offset": self.offset, "next": following}


async def page_params(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Page size")] = DEFAULT_LIMIT,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Items to skip")] = 0,
) -> PageParams:
    path = request.url.path
    return PageParams(
        limit=limit, offset=offset, path=path, query=tuple(request.query_params.multi_items())
    )


Paging = Annotated[PageParams, Depends(page_params)]


async def fetch_page(
    session: AsyncSession, stmt: Select[*tuple[Any, ...]], paging: PageParams
) -> tuple[list[Any], int]:
    """One page of ``stmt`` (already ordered) and the total count, both computed by the database."""
    total = (
        await session.execute(select(func.count()).select_from(stmt.order_by(None).subquery()))
    ).scalar_one()
    rows = (await session.execute(stmt.limit(paging.limit).offset(paging.offset))).all()
    return list(rows), int(total)


async def page_with_total(
    session: AsyncSession, stmt: Select[*tuple[Any, ...]], *, limit: int, offset: int
) -> tuple[list[tuple[Any, ...]], int]:
    """``read_page_with_total`` in the request's session."""
    return await session.run_sync(read_page_with_total, stmt, limit=limit, offset=offset)


def read_page_with_total(
    session: Session, stmt: Select[*tuple[Any, ...]], *, limit: int, offset: int
) -> tuple[list[tuple[Any, ...]], int]:
    """One page of ``stmt`` (already ordered) and the total count in one round trip.

    The count rides along as an uncorrelated scalar subquery, which both databases evaluate
    once per statement (unlike ``count(*) over ()``, it does not make the database read every
    matching row before the limit). Only an empty page past the first needs a second query.
    """
    total = select(func.count()).select_from(stmt.order_by(None).subquery()).scalar_subquery()
    rows = session.execute(stmt.add_columns(total).limit(limit).offset(offset)).all()
    if rows:
        return [tuple(row)[:-1] for row in rows], int(rows[0][-1])
    if offset == 0:
        return [], 0
    count = select(func.count()).select_from(stmt.order_by(None).subquery())
    return [], int(session.execute(count).scalar_one())


def like_pattern(q: str) -> str:
    """A LIKE pattern that matches ``q`` as a literal substring: ``%``, ``_`` and ``\\`` in the
    query match themselves (use with ``escape="\\\\"``, which both databases honour)."""
    escaped = q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def contains_text(column: Any, q: str) -> Any:
    """Case-insensitive substring filter on ``column``, with ``q`` taken literally."""
    return column.ilike(like_pattern(q), escape="\\")
