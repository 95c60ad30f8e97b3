"""The operator CLI drives the same services on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

import orjson
from click.testing import CliRunner
from httpx import ASGITransport, AsyncClient
from sqlalchemy import update
from sqlalchemy.ext.asyncio import create_async_engine

from switchboard.app import create_app
from switchboard.cli import main
from switchboard.settings import Settings
from switchboard.tenants.config import VOICES, TenantConfig
from switchboard.tenants.models import Tenant
from tests.cli.conftest import ok


def _token(host: str, password: str) -> int:
    async def go() -> int:
        app = create_app(Settings(run_workers=False))
        async with AsyncClient(transport=ASGITransport(app=app), base_url=f"http://{host}") as c:
            response = await c.post(
                "/oidc.ashx/token",
                data={
                    "grant_type": "password",
                    "client_id": "portal",
                    "username": "ops",
                    "password": password,
                },
            )
            return response.status_code

    return asyncio.run(go())


def test_tenant_user_client_and_keys(cli: CliRunner) -> None:
    assert "ops" in ok(cli, "tenant", "create", "ops", "--domain", "ops.test", "--domain", "x.test")
    listing = ok(cli, "tenant", "list")
    assert "ops.test,x.test" in listing
    assert listing.strip().endswith("primary")
    ok(cli, "user", "create", "ops", "--tenant", "ops", "--role", "admin", "--password-stdin",
        stdin="a long enough password\n")  # fmt: skip
    ok(cli, "client", "create", "portal", "--tenant", "ops")
    assert _token("ops.test", "a long enough password") == 200
    assert _token("ops.test", "wrong password!") == 400

    key_id, key = ok(cli, "apikey", "create", "--tenant", "ops", "--user", "ops").split()
    assert key.startswith("ak_")
    assert key_id in ok(cli, "apikey", "list", "--tenant", "ops")
    assert key not in ok(cli, "apikey", "list", "--tenant", "ops")
    ok(cli, "apikey", "revoke", key_id, "--tenant", "ops")

    # Tunables snap to their bounds (spec 8.1).
    assert ok(cli, "tenant", "set", "ops", "Phone:Sfu:AutoPromoteHumanCount", "500").split() == [
        "Phone:Sfu:AutoPromoteHumanCount",
        "100.0",
    ]
    shown = ok(cli, "tenant", "show", "ops")
    assert "Phone:Sfu:AutoPromoteHumanCount\t100" in shown
    assert "Phone:Sfu:StressRttMsThreshold\t300" in shown


def test_errors_exit_2_with_a_message(cli: CliRunner) -> None:
    ok(cli, "tenant", "create", "ops", "--domain", "ops.test")
    duplicate = cli.invoke(main, ["tenant", "create", "ops", "--domain", "y.test"])
    assert duplicate.exit_code == 2
    assert "already exists" in duplicate.output
    unknown = cli.invoke(main, ["tenant", "set", "ops", "Nope", "1"])
    assert unknown.exit_code == 2
    # a known prompt's slug: lower-case letters, digits, - and _
    ok(cli, "tenant", "set", "ops", "Prompts:front-desk", "You are the front desk.")
    ok(cli, "tenant", "set", "ops", "Voicemail:Message", "Please call us back.")
    assert "Prompts:front-desk\tYou are the front desk." in ok(cli, "tenant", "show", "ops")
    assert cli.invoke(main, ["tenant", "set", "ops", "Prompts:Front Desk", "x"]).exit_code == 2
    # a value is held to the rule of the call field it stands for, and nothing is stored
    for key, value, words in (
        ("DefaultVoice", "NotAVoice", "must be one of"),
        ("DefaultLanguage", "not a lang", "locale tag"),
        ("DefaultModel", "m" * 300, "at most 128 characters"),
        ("OutcomeEmail:Enabled", "maybe", "true or false"),
        ("ExternalOidc:Issuer", "http://evil.example.com", "must be https"),
    ):
        refused = cli.invoke(main, ["tenant", "set", "ops", key, value])
        assert refused.exit_code == 2, key
        assert key in refused.output
        assert words in refused.output
        assert value not in ok(cli, "tenant", "show", "ops")
    assert ok(cli, "tenant", "set", "ops", "OutcomeEmail:Enabled", "off").split() == [
        "OutcomeEmail:Enabled",
        "false",
    ]
    ok(cli, "tenant", "set", "ops", "ExternalOidc:Issuer", "http://127.0.0.1:8080/realms/x")
    bad_role = cli.invoke(
        main, ["user", "create", "u", "--tenant", "ops", "--role", "root", "--password-stdin"]
    )
    assert bad_role.exit_code == 2


def _store_raw(db_url: str, name: str, settings: dict[str, str]) -> None:
    """Settings written past the rules, as a value stored before a rule existed would be."""

    async def go() -> None:
        engine = create_async_engine(db_url)
        async with engine.begin() as conn:
            await conn.execute(update(Tenant).where(Tenant.name == name).values(settings=settings))
        await engine.dispose()

    asyncio.run(go())


def test_stored_settings_that_break_a_rule_read_as_defaults(cli: CliRunner, db_url: str) -> None:
    ok(cli, "tenant", "create", "ops", "--domain", "ops.test")
    ok(cli, "tenant", "create", "calm", "--domain", "calm.test")
    assert ok(cli, "tenant", "check") == ""
    _store_raw(db_url, "ops", {
        "DefaultVoice": "NotAVoice",
        "DefaultLanguage": "en-GB",
        "ExternalOidc:Issuer": "http://evil.example.com",
        "Voicemail:Message": "Please call back.",
        "Prompts:front-desk": "x" * 50_001,
    })  # fmt: skip
    shown = orjson.loads(ok(cli, "tenant", "show", "ops", "--json"))["settings"]
    assert shown["DefaultVoice"] == "Aoede"  # the default, not the broken value
    assert shown["DefaultLanguage"] == "en-GB"  # a good value next to it still counts
    assert shown["Voicemail:Message"] == "Please call back."
    assert "Prompts:front-desk" not in shown
    checked = cli.invoke(main, ["tenant", "check"])
    assert checked.exit_code == 1
    assert checked.output.splitlines() == [
        "ops\tDefaultVoice\tmust be one of " + ", ".join(VOICES),
        "ops\tExternalOidc:Issuer\tmust be https (http only on a loopback address)",
        "ops\tPrompts:front-desk\tat most 50,000 characters",
    ]
    # an issuer that breaks its rule is no issuer: its tokens are refused, not trusted
    assert TenantConfig.from_settings({"ExternalOidc:Issuer": "http://evil.example.com"}) == (
        TenantConfig.from_settings({})
    )
    ok(cli, "tenant", "set", "ops", "DefaultVoice", "Puck")
    ok(cli, "tenant", "set", "ops", "ExternalOidc:Issuer", "")
    ok(cli, "tenant", "set", "ops", "Prompts:front-desk", "")
    assert ok(cli, "tenant", "check") == ""


def test_signing_key_rotation(cli: CliRunner) -> None:
    before = ok(cli, "keys", "list").splitlines()
    new = ok(cli, "keys", "rotate").strip()
    after = ok(cli, "keys", "list")
    assert f"{new}\tactive" in after
    assert len(after.splitlines()) == len(before) + 1
    old = before[0].split("\t")[0]
    ok(cli, "keys", "retire", old)
    assert f"{old}\tretired" in ok(cli, "keys", "list")
