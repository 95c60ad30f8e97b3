"""``switchboard user list`` shows who is locked out after wrong passwords, and how many of their
browsers (decisions 0006, 0031; the console's Users page shows the same), and ``switchboard user
unlock`` lets them sign in again at once; an unknown user is one line on standard error and exit
status 2."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator

import orjson
import pytest
from click.testing import CliRunner, Result
from httpx import ASGITransport, AsyncClient

from switchboard.app import create_app
from switchboard.cli import main
from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from tests.console.signin import console_clients, sign_in
from tests.factories import PASSWORD, TenantFixture
from tests.identity.test_signin_devices import attempt, lock_out


@pytest.fixture
def clock() -> ManualClock:
    # The command reads the lockout with the wall clock: the server locks at its time.
    return ManualClock(dt.datetime.now(dt.UTC).replace(microsecond=0))


@pytest.fixture
async def client(runtime: Runtime, acme: TenantFixture) -> AsyncIterator[AsyncClient]:
    app = create_app(runtime=runtime)
    async with runtime.lifespan():
        transport = ASGITransport(app=app)
        async with AsyncClient(transport=transport, base_url=f"http://{acme.host}") as client:
            yield client


async def run(cli: CliRunner, *args: str) -> Result:
    return await asyncio.to_thread(cli.invoke, main, ["user", *args])


async def grant(client: AsyncClient, password: str) -> int:
    form = {"grant_type": "password", "client_id": "cli", "username": "admin", "password": password}
    return (await client.post("/oidc.ashx/token", data=form)).status_code


async def listed(cli: CliRunner, tenant: str) -> dict[str, dict[str, object]]:
    result = await run(cli, "list", "--tenant", tenant, "--json")
    assert result.exit_code == 0, result.output
    rows = [orjson.loads(line) for line in result.output.splitlines()]
    return {str(row["username"]): row for row in rows}


async def test_a_locked_out_user_is_listed_and_unlocked(
    client: AsyncClient, cli: CliRunner, acme: TenantFixture
) -> None:
    before = await listed(cli, acme.name)
    assert before["admin"]["lockedUntilUtc"] is None
    assert (before["admin"]["role"], before["admin"]["disabled"]) == ("admin", False)
    assert before["admin"]["lockedBrowsers"] == 0
    assert set(before) >= {"admin", "power", "user"}

    for _ in range(5):
        assert await grant(client, "wrong-password") == 400
    assert await grant(client, PASSWORD) == 429
    locked = (await listed(cli, acme.name))["admin"]
    assert locked["failedSignIns"] == 5
    assert isinstance(locked["lockedUntilUtc"], str)
    plain = await run(cli, "list", "--tenant", acme.name)
    line = next(row for row in plain.output.splitlines() if row.startswith("admin\t"))
    assert line.split("\t")[-2:] == [locked["lockedUntilUtc"], "0"]

    result = await run(cli, "unlock", "admin", "--tenant", acme.name)
    assert (result.exit_code, result.output) == (0, "unlocked\tadmin\n")
    after = (await listed(cli, acme.name))["admin"]
    assert (after["failedSignIns"], after["lockedUntilUtc"]) == (0, None)
    assert await grant(client, PASSWORD) == 200


async def test_a_locked_browser_is_listed_and_unlocked(
    runtime: Runtime, acme: TenantFixture, cli: CliRunner
) -> None:
    """Wrong passwords in a browser the user signed in with lock that browser alone (decision
    0031): the listing counts it, and an unlock lifts it."""
    await console_clients(runtime, acme)
    transport = ASGITransport(app=create_app(runtime=runtime))
    base = f"http://{acme.host}"
    async with (
        runtime.lifespan(),
        AsyncClient(transport=transport) as own,
        AsyncClient(transport=transport, base_url=base) as console,
    ):
        assert await attempt(own, acme.host, PASSWORD) == 303
        await lock_out(own, acme.host)
        admin = (await listed(cli, acme.name))["admin"]
        assert (admin["lockedBrowsers"], admin["lockedUntilUtc"]) == (1, None)
        # The console's Users page says so and offers the unlock (in another browser, which the
        # lock leaves alone).
        assert (await sign_in(console, "admin")).status_code == 303
        page = (await console.get("/admin/users")).text
        row = page[page.index('data-user="admin"') :].split("</tr>")[0]
        assert "1 browser locked" in row
        assert "/admin/users/admin/unlock" in row
        assert (await run(cli, "unlock", "admin", "--tenant", acme.name)).exit_code == 0
        assert (await listed(cli, acme.name))["admin"]["lockedBrowsers"] == 0
        assert await attempt(own, acme.host, PASSWORD) == 303
        page = (await console.get("/admin/users")).text
        row = page[page.index('data-user="admin"') :].split("</tr>")[0]
        assert "locked" not in row
        assert "/unlock" not in row


async def test_unlocking_an_unknown_user_changes_nothing(
    cli: CliRunner, acme: TenantFixture
) -> None:
    result = await run(cli, "unlock", "nobody", "--tenant", acme.name)
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    result = await run(cli, "unlock", "admin", "--tenant", "no-such-tenant")
    assert result.exit_code == 2
