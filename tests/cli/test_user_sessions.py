"""``switchboard user sessions`` lists a user's live identity provider sessions, newest first
(JSON Lines with ``--json``); ``switchboard user end-session`` ends one: the web app session
signed in through it is refused on its next request, the user's other browser goes on. Another
user's session, or an unknown one, is one line on standard error and exit status 2."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections.abc import AsyncIterator

import orjson
import pytest
from click.testing import CliRunner, Result
from httpx import ASGITransport, AsyncClient
from sqlalchemy import update

from switchboard.app import create_app
from switchboard.auth.models import BrowserSession
from switchboard.cli import main
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from tests.console.signin import console_clients, sign_in
from tests.factories import TenantFixture

PAGE = "/app/properties"


@pytest.fixture
def clock() -> ManualClock:
    # The command reads the sessions with the wall clock: the browsers sign in at its time.
    return ManualClock(dt.datetime.now(dt.UTC).replace(microsecond=0))


@pytest.fixture
async def transport(runtime: Runtime, acme: TenantFixture) -> AsyncIterator[ASGITransport]:
    await console_clients(runtime, acme)
    app = create_app(runtime=runtime)
    async with runtime.lifespan():
        yield ASGITransport(app=app)


def browser(transport: ASGITransport, acme: TenantFixture, agent: str) -> AsyncClient:
    return AsyncClient(
        transport=transport, base_url=f"http://{acme.host}", headers={"user-agent": agent}
    )


async def run(cli: CliRunner, *args: str) -> Result:
    return await asyncio.to_thread(cli.invoke, main, ["user", *args])


async def test_list_and_end_one_session_from_the_cli(
    transport: ASGITransport, acme: TenantFixture, cli: CliRunner, clock: ManualClock
) -> None:
    async with (
        browser(transport, acme, "Laptop/1.0") as laptop,
        browser(transport, acme, "Phone/2.0") as phone,
    ):
        assert (await sign_in(laptop, "power", mount="/app")).status_code == 303
        clock.advance(60)
        assert (await sign_in(phone, "power", mount="/app")).status_code == 303

        listed = await run(cli, "sessions", "power", "--tenant", "acme")
        assert listed.exit_code == 0, listed.output
        lines = [line.split("\t") for line in listed.output.splitlines()]
        assert [line[3:] for line in lines] == [
            ["127.0.0.1", "Phone/2.0"], ["127.0.0.1", "Laptop/1.0"],
        ]  # fmt: skip
        assert lines[0][1] > lines[1][1]  # newest first
        as_json = await run(cli, "sessions", "power", "--tenant", "acme", "--json")
        assert as_json.exit_code == 0, as_json.output
        views = [orjson.loads(line) for line in as_json.output.splitlines()]
        assert [sorted(view) for view in views] == [
            ["address", "expiresAtUtc", "sid", "startedAtUtc", "userAgent"]
        ] * 2
        assert [view["sid"] for view in views] == [line[0] for line in lines]
        laptop_sid = views[1]["sid"]

        ended = await run(cli, "end-session", "power", laptop_sid, "--tenant", "acme")
        assert (ended.exit_code, ended.output) == (0, f"ended\t{laptop_sid}\n")
        stale = await laptop.get(PAGE)
        assert stale.status_code == 303
        assert stale.headers["location"].startswith("/app/login?next=")
        assert (await phone.get(PAGE)).status_code == 200
        after = await run(cli, "sessions", "power", "--tenant", "acme")
        assert [line.split("\t")[0] for line in after.output.splitlines()] == [views[0]["sid"]]


async def test_another_users_or_an_unknown_session_is_one_line_and_exit_2(
    transport: ASGITransport, acme: TenantFixture, cli: CliRunner
) -> None:
    async with browser(transport, acme, "Laptop/1.0") as laptop:
        assert (await sign_in(laptop, "power", mount="/app")).status_code == 303
        listed = await run(cli, "sessions", "power", "--tenant", "acme")
        sid = listed.output.split("\t")[0]
        for args, message in (
            (("admin", sid, "--tenant", "acme"), f"error: no session '{sid}' of 'admin'\n"),
            (("power", "nope", "--tenant", "acme"), "error: no session 'nope' of 'power'\n"),
            (("nobody", sid, "--tenant", "acme"), "error: no user 'nobody' in this tenant\n"),
            (("power", sid, "--tenant", "nowhere"), "error: no tenant named 'nowhere'\n"),
        ):
            refused = await run(cli, "end-session", *args)
            assert (refused.exit_code, refused.output) == (2, message)
        assert (await laptop.get(PAGE)).status_code == 200  # nothing ended
        nobody = await run(cli, "sessions", "nobody", "--tenant", "acme")
        assert (nobody.exit_code, nobody.output) == (2, "error: no user 'nobody' in this tenant\n")


async def test_sids_are_hex_and_an_older_one_beginning_with_a_dash_follows_the_separator(
    transport: ASGITransport, acme: TenantFixture, cli: CliRunner, runtime: Runtime
) -> None:
    """A SID is an argument on the command line: new ones never begin with '-', which would
    read as an option; an older one that does is named after ``--``."""
    async with browser(transport, acme, "Laptop/1.0") as laptop:
        assert (await sign_in(laptop, "power", mount="/app")).status_code == 303
        listed = await run(cli, "sessions", "power", "--tenant", "acme")
        sid = listed.output.split("\t")[0]
        assert re.fullmatch("[0-9a-f]{32}", sid), sid
        older = "-y" + sid[2:]
        async with runtime.db.transaction() as session:  # as sessions of before could be named
            await session.execute(
                update(BrowserSession).where(BrowserSession.sid == sid).values(sid=older)
            )
        ended = await run(cli, "end-session", "--tenant", "acme", "--", "power", older)
        assert (ended.exit_code, ended.output) == (0, f"ended\t{older}\n")
        assert (await laptop.get(PAGE)).status_code == 303
