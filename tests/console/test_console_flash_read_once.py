"""A result shown once is read once (decision 0602): its values wait on the server, sealed, and
the page that shows them deletes them, so that a copy of the flash cookie, sent again or at
the same time, shows the plain page; a flash never read is purged once it expires."""

from __future__ import annotations

import asyncio

import pytest
from httpx import AsyncClient
from sqlalchemy import func, select

from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from switchboard.web.cookies import FLASH_SECONDS
from switchboard.web.models import PendingFlash
from switchboard.web.tasks import purge
from tests.console.signin import csrf_of, sign_in
from tests.console.test_console_secrets_once import FLASH, flash_expired, secret_of

PAGE = "/admin/api-keys"


@pytest.fixture
async def browsers(two: list[AsyncClient]) -> list[AsyncClient]:
    """Two browsers on acme's host, each signed in to the console: two sessions."""
    for browser in two:
        await sign_in(browser)
    return two


async def mint(client: AsyncClient, name: str) -> str:
    """Mint a key; the flash cookie the answer set (its sealed value)."""
    token = csrf_of((await client.get(PAGE)).text)
    minted = await client.post(PAGE, data={"name": name, "csrf": token})
    assert minted.status_code == 303
    sealed = client.cookies.get(FLASH, path="/admin")
    assert sealed
    return sealed


def send(client: AsyncClient, sealed: str) -> None:
    client.cookies.set(FLASH, sealed, domain=str(client.base_url.host), path="/admin")


async def pending(runtime: Runtime) -> list[str]:
    async with runtime.db.transaction(read_only=True) as session:
        return list(await session.scalars(select(PendingFlash.values_sealed)))


async def test_a_copied_flash_cookie_shows_nothing_once_the_page_was_shown(
    browsers: list[AsyncClient], runtime: Runtime
) -> None:
    first, second = browsers
    copy = await mint(first, "billing")
    (stored,) = await pending(runtime)
    send(second, copy)  # another session's browser: nothing, and the flash stays for its own
    stolen = await second.get(PAGE)
    assert secret_of(stolen.text) is None
    assert flash_expired(stolen)
    assert len(await pending(runtime)) == 1
    shown = await first.get(PAGE)
    key = secret_of(shown.text)
    assert key is not None
    assert key.startswith("ak_")
    assert key not in stored  # sealed at rest too
    assert "billing" not in stored
    assert await pending(runtime) == []  # read, and gone
    send(first, copy)  # the same session sends the same cookie again, well within its 5 minutes
    replayed = await first.get(PAGE)
    assert replayed.status_code == 200
    assert secret_of(replayed.text) is None
    assert "minted." not in replayed.text
    assert flash_expired(replayed)
    assert replayed.text.count("<tr data-key=") == 1  # and nothing was minted again


async def test_two_requests_with_one_flash_show_it_once(
    browsers: list[AsyncClient], runtime: Runtime
) -> None:
    first, _ = browsers
    copy = await mint(first, "twice")
    pages = await asyncio.gather(*(first.get(PAGE) for _ in range(4)))
    assert [page.status_code for page in pages] == [200] * 4
    shown = [secret for page in pages if (secret := secret_of(page.text)) is not None]
    assert len(shown) == 1
    assert shown[0].startswith("ak_")
    send(first, copy)
    assert secret_of((await first.get(PAGE)).text) is None
    assert await pending(runtime) == []


async def test_an_expired_flash_shows_nothing_and_an_unread_one_is_purged(
    browsers: list[AsyncClient], runtime: Runtime, clock: ManualClock
) -> None:
    first, second = browsers
    await mint(first, "late")
    clock.advance(FLASH_SECONDS + 1)
    late = await first.get(PAGE)
    assert secret_of(late.text) is None
    assert flash_expired(late)
    copy = await mint(first, "never read")
    await mint(second, "read in time")
    assert len(await pending(runtime)) == 3  # the late one's row is left to the purge as well
    assert secret_of((await second.get(PAGE)).text) is not None
    async with runtime.db.transaction() as session:
        assert await purge(session, now=clock.now()) == (0, 1)  # the late one only
    clock.advance(FLASH_SECONDS)
    async with runtime.db.transaction() as session:
        assert await purge(session, now=clock.now()) == (0, 1)  # the one never read
    async with runtime.db.transaction(read_only=True) as session:
        assert await session.scalar(select(func.count()).select_from(PendingFlash)) == 0
    clock.advance(-FLASH_SECONDS)  # its cookie would be in time again: its values are gone
    send(first, copy)
    assert secret_of((await first.get(PAGE)).text) is None


async def test_a_page_that_fails_keeps_the_flash_for_the_reload(
    browsers: list[AsyncClient], runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page renders with the values before it takes them: a page that fails (here its
    template, made to fail once) has taken nothing, and the reload shows the secret once."""
    from switchboard.console import deps
    from switchboard.console.pages import apikeys

    first, _ = browsers
    await mint(first, "billing")
    real = deps.render  # what the page module imported

    def broken(*args: object, **kwargs: object) -> object:
        monkeypatch.setattr(apikeys, "render", real)
        raise RuntimeError("the template failed")

    monkeypatch.setattr(apikeys, "render", broken)
    with pytest.raises(RuntimeError, match="the template failed"):
        await first.get(PAGE)
    assert len(await pending(runtime)) == 1
    shown = await first.get(PAGE)
    key = secret_of(shown.text)
    assert key is not None
    assert key.startswith("ak_")
    assert await pending(runtime) == []
    assert secret_of((await first.get(PAGE)).text) is None
