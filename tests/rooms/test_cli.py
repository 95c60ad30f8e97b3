"""``switchboard room list|lobby|promote|demote`` against a running server."""

from __future__ import annotations

import asyncio

from click.testing import CliRunner

from switchboard.runtime import Runtime
from tests import factories
from tests.cli.conftest import ok
from tests.rooms.conftest import Client, Server


async def test_promote_list_and_demote(
    server: Server, acme: factories.TenantFixture, hooks: object, cli: CliRunner,
    runtime: Runtime,
) -> None:  # fmt: skip
    peer = Client(await server.peer(acme.host, "standup"))
    await peer.send(type="join", name="A")
    await peer.expect("welcome")
    url = f"http://127.0.0.1:{server.port}"

    def run(*args: str) -> str:
        return ok(cli, "room", *args)

    out = await asyncio.to_thread(run, "promote", "--tenant", "acme", "--room", "standup",
                                  "--url", url)  # fmt: skip
    assert out == "standup\tsfu\tchanged\n"
    assert (await peer.expect("mode"))["reason"] == "admin-override"
    assert await asyncio.to_thread(run, "list", "--tenant", "acme") == "standup\tsfu\topen\t1\t1\n"
    out = await asyncio.to_thread(run, "demote", "--tenant", "acme", "--room", "standup",
                                  "--url", url, "--reason", "back to mesh")  # fmt: skip
    assert out == "standup\tmesh\tchanged\n"
    assert await peer.expect("mode") == {"type": "mode", "mode": "mesh", "reason": "back to mesh"}
    assert await asyncio.to_thread(run, "lobby", "--tenant", "acme", "--room", "hall") == (
        "hall\tlobby\n"
    )
    listed = await asyncio.to_thread(run, "list", "--tenant", "acme", "--json")
    assert '"room":"hall"' in listed
    assert '"lobby":true' in listed
