"""``switchboard federation ...``: providers managed from the CLI; secrets stay out of the DB."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from switchboard.cli import main
from tests.cli.conftest import cli, ok

__all__ = ["cli"]


def test_add_list_disable_enable_remove(cli: CliRunner, tmp_path: Path, db_url: str) -> None:
    ok(cli, "tenant", "create", "acme", "--domain", "acme.test")
    secret = tmp_path / "secret"
    secret.write_text("cs_the-secret-itself\n")
    added = ok(
        cli, "federation", "add", "partners", "--tenant", "acme",
        "--issuer", "https://login.partners.example/realms/staff", "--client-id", "acme-idp",
        "--client-secret-file", str(secret), "--display-name", "Partners",
        "--role-claim", "roles", "--allowed-domain", "Partners.example",
        "--first-login", "link-by-verified-email",
    )  # fmt: skip
    assert "/oidc.ashx/federation/partners/callback" in added
    listed = ok(cli, "federation", "list", "--tenant", "acme")
    assert listed.split("\t")[:2] == ["partners", "enabled"]
    view = json.loads(ok(cli, "federation", "list", "--tenant", "acme", "--json"))
    assert view["allowedDomains"] == ["partners.example"]
    assert view["secret"] == "file"
    assert view["firstLogin"] == "link-by-verified-email"
    assert "cs_the-secret-itself" not in json.dumps(view)
    ok(cli, "federation", "disable", "partners", "--tenant", "acme")
    assert "\tdisabled\t" in ok(cli, "federation", "list", "--tenant", "acme")
    ok(cli, "federation", "enable", "partners", "--tenant", "acme")
    updated = ok(
        cli, "federation", "update", "partners", "--tenant", "acme", "--client-id", "acme-idp-2",
        "--client-secret-env", "PARTNERS_SECRET", "--any-domain", "--role-claim", "",
    )  # fmt: skip
    assert updated == "updated\tpartners\n"
    view = json.loads(ok(cli, "federation", "list", "--tenant", "acme", "--json"))
    assert view["clientId"] == "acme-idp-2"
    assert view["secret"] == "env"
    assert view["allowedDomains"] == []
    assert view["roleClaim"] is None
    assert view["firstLogin"] == "link-by-verified-email"  # not given: unchanged
    assert view["issuer"] == "https://login.partners.example/realms/staff"
    refused = cli.invoke(
        main,
        ["federation", "update", "partners", "--tenant", "acme", "--issuer", "http://x.example"],
    )
    assert refused.exit_code == 2
    assert "https" in refused.output
    duplicate = cli.invoke(
        main, ["federation", "add", "partners", "--tenant", "acme", "--issuer",
               "https://other.example", "--client-id", "x", "--client-secret-env", "X"],
    )  # fmt: skip
    assert duplicate.exit_code == 2
    assert "already exists" in duplicate.output
    ok(cli, "federation", "remove", "partners", "--tenant", "acme")
    assert ok(cli, "federation", "list", "--tenant", "acme") == ""


def test_a_plain_http_issuer_is_refused_unless_loopback(cli: CliRunner) -> None:
    ok(cli, "tenant", "create", "acme", "--domain", "acme.test")
    base = ["federation", "add", "p", "--tenant", "acme", "--client-id", "c"]
    refused = cli.invoke(main, [*base, "--issuer", "http://login.example"])
    assert refused.exit_code == 2
    assert "https" in refused.output
    ok(cli, *base, "--issuer", "http://127.0.0.1:8080/oidc.ashx")
