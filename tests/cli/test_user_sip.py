"""``switchboard user set-sip``: what an operator stores is where the bridge rings the user."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from click.testing import CliRunner
from httpx import ASGITransport, AsyncClient

from switchboard.app import create_app
from switchboard.bridge import protocol
from switchboard.cli import main
from switchboard.settings import Settings
from tests.cli.conftest import ok


def route(did: str) -> tuple[int, dict[str, Any]]:
    """Ask the platform, as the bridge does, who answers ``did`` on ops.test."""

    async def go() -> tuple[int, dict[str, Any]]:
        settings = Settings(run_workers=False)
        secret = protocol.derive_secret(settings.bridge_secret, settings.secret_key)
        body = orjson.dumps({"protocol": 1, "domain": "ops.test", "did": did})
        headers = {protocol.SIGNATURE_HEADER: protocol.sign(secret, body)}
        transport = ASGITransport(app=create_app(settings))
        async with AsyncClient(transport=transport, base_url="http://ops.test") as client:
            response = await client.post(protocol.INBOUND_ROUTE_PATH, content=body, headers=headers)
            answer: dict[str, Any] = response.json()
            return response.status_code, answer

    return asyncio.run(go())


def test_set_and_clear_a_users_sip_address(cli: CliRunner) -> None:
    ok(cli, "tenant", "create", "ops", "--domain", "ops.test")
    ok(cli, "user", "create", "admin", "--tenant", "ops", "--role", "admin", "--password-stdin",
       stdin="a long enough password\n")  # fmt: skip
    assert route("+4930100")[0] == 404  # the catchall rings admin, who has no SIP address yet

    shown = ok(cli, "user", "set-sip", "admin", "--tenant", "ops", "--uri", "sip:admin@10.0.0.5")
    assert shown == "admin\tsip:admin@10.0.0.5\n"
    status, answer = route("+4930100")
    assert (status, answer["action"], answer["sipUri"]) == (200, "office-tab", "sip:admin@10.0.0.5")

    assert ok(cli, "user", "set-sip", "admin", "--tenant", "ops", "--clear") == "admin\t-\n"
    assert route("+4930100")[0] == 404


def test_set_sip_refuses_bad_input_and_changes_nothing(cli: CliRunner) -> None:
    ok(cli, "tenant", "create", "ops", "--domain", "ops.test")
    ok(cli, "user", "create", "admin", "--tenant", "ops", "--role", "admin", "--password-stdin",
       stdin="a long enough password\n")  # fmt: skip
    ok(cli, "user", "set-sip", "admin", "--tenant", "ops", "--uri", "sip:admin@pbx.ops.test")

    for args, message in [
        (["--uri", "http://pbx.ops.test"], "sip: or sips: URI"),
        (["--uri", "sip:x@pbx.ops.test", "--clear"], "exactly one of --uri and --clear"),
        ([], "exactly one of --uri and --clear"),
    ]:
        result = cli.invoke(main, ["user", "set-sip", "admin", "--tenant", "ops", *args])
        assert result.exit_code == 2, result.output
        assert message in result.output
    for who, where in (("nobody", "ops"), ("admin", "nowhere")):
        result = cli.invoke(main, ["user", "set-sip", who, "--tenant", where, "--clear"])
        assert (result.exit_code, "error:" in result.output) == (2, True)
    assert route("+4930100")[1]["sipUri"] == "sip:admin@pbx.ops.test"
