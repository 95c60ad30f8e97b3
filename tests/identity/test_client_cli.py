"""Registering clients and their URIs from the CLI; the console client of every new tenant."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from switchboard.cli import main


@pytest.fixture
def cli(cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """The web apps' own clients are registered under an https public URL."""
    monkeypatch.setenv("SWITCHBOARD_PUBLIC_BASE_URL", "https://ops.test")
    return cli


def _run(cli: CliRunner, *args: str) -> tuple[int, str]:
    result = cli.invoke(main, list(args))
    return result.exit_code, result.output


def test_client_registration_and_uris(cli: CliRunner) -> None:
    assert _run(cli, "tenant", "create", "ops", "--domain", "ops.test")[0] == 0
    code, out = _run(
        cli, "client", "create", "crm", "--tenant", "ops",
        "--redirect-uri", "https://crm.example/cb", "--redirect-uri", "http://127.0.0.1:9/cb",
        "--post-logout-redirect-uri", "https://crm.example/",
    )  # fmt: skip
    assert (code, out) == (0, "crm\n")
    code, out = _run(cli, "client", "create", "api", "--tenant", "ops", "--confidential")
    assert code == 0
    client_id, secret = out.strip().split("\t")
    assert client_id == "api"
    assert secret.startswith("cs_")
    assert len(secret) > 40
    listing = _run(cli, "client", "list", "--tenant", "ops")[1].splitlines()
    assert listing == [
        "console\tpublic\thttps://ops.test/admin/callback\thttps://ops.test/admin/",
        "linen\tpublic\thttps://ops.test/app/callback\thttps://ops.test/app/",
        "crm\tpublic\thttps://crm.example/cb,http://127.0.0.1:9/cb\thttps://crm.example/",
        "api\tconfidential\t-\t-",
    ]
    code, out = _run(
        cli, "client", "set-uris", "crm", "--tenant", "ops", "--redirect-uri", "https://crm.example/v2"
    )  # fmt: skip
    assert (code, out) == (0, "crm\tpublic\thttps://crm.example/v2\t-\n")
    # Bad URIs are refused and change nothing.
    for bad in ("/relative", "https://crm.example/cb#frag", "ftp://crm.example/", "javascript:x"):
        code, out = _run(cli, "client", "set-uris", "crm", "--tenant", "ops", "--redirect-uri", bad)
        assert code != 0, bad
    assert "https://crm.example/v2" in _run(cli, "client", "list", "--tenant", "ops")[1]
    assert _run(cli, "client", "set-uris", "nope", "--tenant", "ops")[0] != 0


def test_demo_registers_the_console_client(cli: CliRunner) -> None:
    code, out = _run(cli, "demo")
    assert code == 0, out
    assert "console redirect URI: https://ops.test/admin/callback" in out
    listing = _run(cli, "client", "list", "--tenant", "demo")[1]
    assert "console\tpublic\thttps://ops.test/admin/callback\thttps://ops.test/admin/" in listing


def test_demo_makes_the_linen_portal_usable(cli: CliRunner) -> None:
    code, out = _run(cli, "demo")
    assert code == 0, out
    assert "linen portal: https://ops.test/app/" in out
    listing = _run(cli, "client", "list", "--tenant", "demo")[1]
    assert "linen\tpublic\thttps://ops.test/app/callback\thttps://ops.test/app/" in listing
    laundries = _run(cli, "linen", "laundries", "demo")[1]
    assert "Lavandaria" in laundries
    rows = [json.loads(line) for line in _run(cli, "linen", "stats", "demo")[1].splitlines()]
    assert len(rows) == 2  # last month's sheets and this month's
    assert sum(row["sheets"] for row in rows) == 6  # four delivered, two confirmed
    assert any(row["invoicedCost"] for row in rows)


def test_web_clients_answer_on_every_domain_of_the_tenant(
    cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    domains = ("--domain", "ops.test", "--domain", "WWW.Ops.Test")
    assert _run(cli, "tenant", "create", "ops", *domains)[0] == 0
    listing = _run(cli, "client", "list", "--tenant", "ops")[1].splitlines()
    assert listing[:2] == [
        "console\tpublic\thttps://ops.test/admin/callback,https://www.ops.test/admin/callback"
        "\thttps://ops.test/admin/,https://www.ops.test/admin/",
        "linen\tpublic\thttps://ops.test/app/callback,https://www.ops.test/app/callback"
        "\thttps://ops.test/app/,https://www.ops.test/app/",
    ]
    # The demo on a loopback address also answers on ``localhost``: either name signs in.
    monkeypatch.setenv("SWITCHBOARD_PUBLIC_BASE_URL", "http://127.0.0.1:8123")
    code, out = _run(cli, "demo")
    assert code == 0, out
    assert "console redirect URI: http://127.0.0.1:8123/admin/callback" in out
    assert "console redirect URI: http://localhost:8123/admin/callback" in out
    demo = _run(cli, "client", "list", "--tenant", "demo")[1]
    assert "http://localhost:8123/app/callback" in demo


def test_a_tenants_domains_change_and_its_web_clients_follow(cli: CliRunner) -> None:
    assert _run(cli, "tenant", "create", "ops", "--domain", "ops.test")[0] == 0
    assert _run(cli, "tenant", "create", "other", "--domain", "other.test")[0] == 0
    code, out = _run(cli, "tenant", "add-domain", "ops", "Portal.Ops.Test", "ops.test")
    assert (code, out) == (0, "added\tportal.ops.test\n")  # the one it had is no change
    tenants = [json.loads(line) for line in _run(cli, "tenant", "list", "--json")[1].splitlines()]
    assert tenants[0]["domains"] == ["ops.test", "portal.ops.test"]
    listing = _run(cli, "client", "list", "--tenant", "ops")[1].splitlines()
    assert listing[:2] == [
        "console\tpublic\thttps://ops.test/admin/callback,https://portal.ops.test/admin/callback"
        "\thttps://ops.test/admin/,https://portal.ops.test/admin/",
        "linen\tpublic\thttps://ops.test/app/callback,https://portal.ops.test/app/callback"
        "\thttps://ops.test/app/,https://portal.ops.test/app/",
    ]
    # Another tenant's domain, a malformed one, an unknown tenant: refused, nothing changed.
    for args, message in (
        (("add-domain", "ops", "other.test"), "already maps to a tenant"),
        (("add-domain", "ops", "bad domain"), "invalid domain"),
        (("add-domain", "nowhere", "x.test"), "no tenant named 'nowhere'"),
        (("remove-domain", "ops", "other.test"), "has no domain 'other.test'"),
    ):
        code, out = _run(cli, "tenant", *args)
        assert code == 2, args
        assert message in out, out
    assert _run(cli, "tenant", "remove-domain", "ops", "ops.test") == (0, "removed\tops.test\n")
    listing = _run(cli, "client", "list", "--tenant", "ops")[1].splitlines()
    assert listing[0] == (
        "console\tpublic\thttps://portal.ops.test/admin/callback\thttps://portal.ops.test/admin/"
    )
    code, out = _run(cli, "tenant", "remove-domain", "ops", "portal.ops.test")
    assert code == 2
    assert "the last domain" in out
    tenants = [json.loads(line) for line in _run(cli, "tenant", "list", "--json")[1].splitlines()]
    assert tenants[0]["domains"] == ["portal.ops.test"]


def test_the_demo_run_on_another_port_is_served_there_too(
    cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWITCHBOARD_PUBLIC_BASE_URL", "http://127.0.0.1:8000")
    assert _run(cli, "demo")[0] == 0
    monkeypatch.setenv("SWITCHBOARD_PUBLIC_BASE_URL", "http://127.0.0.1:8001")
    code, out = _run(cli, "demo")
    assert (code, out.splitlines()[1:]) == (0, ["  now also on 127.0.0.1:8001, localhost:8001"])
    demo = _run(cli, "client", "list", "--tenant", "demo")[1]
    assert "http://127.0.0.1:8001/admin/callback" in demo
    assert "http://localhost:8000/app/callback" in demo
    code, out = _run(cli, "demo")  # a third time on the same port: nothing more to add
    assert (code, len(out.splitlines())) == (0, 1)
