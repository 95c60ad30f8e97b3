"""A result shown once after a redirect (decision 0602): a form post that makes a secret (an API
key, a password, a share link) or reveals one stores its values on the server, sealed, under a
random id, puts that id in the app's sealed flash cookie and answers 303; the page it names
shows the values once (it renders with them, then deletes them) and expires the cookie, so a
reload, the back button or a copy of the cookie shows the plain page and never posts again."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import orjson
from cryptography.exceptions import InvalidTag
from fastapi import Request
from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session as SyncSession
from starlette.responses import RedirectResponse, Response

from switchboard.kit.crypto import random_token, sha256_hex
from switchboard.runtime import Runtime
from switchboard.web.cookies import FLASH_SECONDS, CookieJar, Flash, WebSession, flash_owner
from switchboard.web.models import PendingFlash
from switchboard.web.signin import cookie_jar


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


async def show_once(
    request: Request, db: AsyncSession, session: WebSession, url: str, /, **values: str
) -> Response:
    """303 to ``url`` (a page of the app), which shows ``values`` once (``once_for``).
    The values are stored in ``db``, the post's transaction: they are there once it commits
    and not at all if it fails."""
    runtime = _runtime(request)
    now = runtime.clock.now()
    expires = now + dt.timedelta(seconds=FLASH_SECONDS)
    flash_id = random_token()
    await db.execute(
        insert(PendingFlash).values(
            id_hash=sha256_hex(flash_id), expires_at=expires,
            values_sealed=runtime.box.seal(orjson.dumps(values).decode()),
        )
    )  # fmt: skip
    flash = Flash(
        page=unquote(urlsplit(url).path), owner=flash_owner(session),
        expires=int(expires.timestamp()), id=flash_id,
    )  # fmt: skip
    response = RedirectResponse(url, status_code=303)
    cookie_jar(request).set_flash(response, flash)
    return response


Page = Callable[[dict[str, str]], Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class Once:
    """What this page may show once (``values``, empty when nothing), and the cookie to expire."""

    values: dict[str, str]
    _jar: CookieJar
    _present: bool
    _runtime: Runtime
    _flash_id: str | None

    async def show(self, page: Page) -> Response:
        """``page`` rendered with the values, which are then taken (deleted); whoever comes
        next (a reload, a copy of the cookie, a concurrent request) finds nothing. Rendered
        before they are taken, so a page that fails leaves them for the reload; when another
        request took them meanwhile, the page is rendered again without them."""
        response = await page(self.values)
        if self.values and not await _take(self._runtime, self._flash_id or ""):
            response = await page({})
        return self._spent(response)

    def _spent(self, response: Response) -> Response:
        """``response`` expiring the flash cookie, if the request had one: a reload finds
        nothing. A flash the page could not use (another session's, expired) goes too."""
        if self._present:
            self._jar.clear(response, self._jar.flash_cookie)
        return response


async def once_for(request: Request, session: WebSession) -> Once:
    """The flash ``show_once`` left for this session and this page, if any, read but not yet
    taken (``Once.show`` takes it). A cookie for another session or page leaves the values
    where they are."""
    runtime = _runtime(request)
    jar = cookie_jar(request)
    raw = request.cookies.get(jar.flash_cookie)
    now = runtime.clock.now()
    found = jar.flash(
        raw, session=session, page=unquote(request.url.path), now=int(now.timestamp())
    )
    values = await _peek(runtime, found, now=now) if found is not None else {}
    return Once(values=values, _jar=jar, _present=raw is not None, _runtime=runtime,
                _flash_id=found)  # fmt: skip


async def _peek(runtime: Runtime, flash_id: str, *, now: dt.datetime) -> dict[str, str]:
    """The values of the flash ``flash_id`` (none when it is gone or expired), left in place."""
    statement = select(PendingFlash.values_sealed, PendingFlash.expires_at).where(
        PendingFlash.id_hash == sha256_hex(flash_id)
    )

    def peek(db: SyncSession) -> tuple[str, dt.datetime] | None:
        row = db.connection().execute(statement).first()
        return None if row is None else (row[0], row[1])

    row = await runtime.db.read(peek)
    if row is None or row[1] <= now:
        return {}
    try:
        values: Any = orjson.loads(runtime.box.open(row[0]))
    except (InvalidTag, ValueError):  # sealed under another key (SWITCHBOARD_SECRET_KEY changed)
        return {}
    if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
        return {}
    return values


async def _take(runtime: Runtime, flash_id: str) -> bool:
    """Delete the flash ``flash_id``; whether this call did. One DELETE ... RETURNING, a write
    of its own (the page's transaction is read-only): of two requests with the same id only one
    gets the row, on SQLite (one writer at a time) as on PostgreSQL (the second DELETE waits
    for the first's row lock, then finds no row)."""
    statement = (
        delete(PendingFlash)
        .where(PendingFlash.id_hash == sha256_hex(flash_id))
        .returning(PendingFlash.id_hash)
    )

    def take(db: SyncSession) -> bool:
        return db.connection().execute(statement).first() is not None

    return await runtime.db.write(take, single=True)
