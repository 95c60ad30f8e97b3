"""``switchboard federation ...``: providers managed from the CLI. A client secret is stored
sealed, or read from where the operator keeps it: variables named SWITCHBOARD_FEDERATION_SECRET_*
and files under SWITCHBOARD_FEDERATION_SECRETS_DIR, nowhere else."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import create_async_engine

from switchboard.cli import main
from switchboard.identity.federation.models import ExternalProvider
from switchboard.kit.crypto import SecretBox
from tests.cli.conftest import ok
from tests.conftest import TEST_SECRET


@pytest.fixture
def secrets_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "federation-secrets"
    folder.mkdir()
    monkeypatch.setenv("SWITCHBOARD_FEDERATION_SECRETS_DIR", str(folder))
    return folder


def test_add_list_disable_enable_remove(cli: CliRunner, secrets_dir: Path) -> None:
    ok(cli, "tenant", "create", "acme", "--domain", "acme.test")
    secret = secrets_dir / "partners"
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
        "--client-secret-env", "SWITCHBOARD_FEDERATION_SECRET_PARTNERS", "--any-domain",
        "--role-claim", "",
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
               "https://other.example", "--client-id", "x"],
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


def _refused(cli: CliRunner, *args: str, stdin: str | None = None) -> str:
    result = cli.invoke(main, list(args), input=stdin)
    assert result.exit_code == 2, result.output
    return result.output


def test_references_are_read_only_inside_the_operators_boundary(
    cli: CliRunner, secrets_dir: Path
) -> None:
    ok(cli, "tenant", "create", "acme", "--domain", "acme.test")
    add = ["federation", "add", "p", "--tenant", "acme", "--issuer", "https://login.example",
           "--client-id", "c"]  # fmt: skip
    for option, where, why in (
        ("--client-secret-env", "PATH", "must be named SWITCHBOARD_FEDERATION_SECRET_*"),
        ("--client-secret-env", "SWITCHBOARD_SECRET_KEY", "SWITCHBOARD_FEDERATION_SECRET_*"),
        ("--client-secret-file", "/proc/self/environ", "not under"),
        ("--client-secret-file", str(secrets_dir / ".." / "elsewhere"), "not under"),
    ):
        assert why in _refused(cli, *add, option, where)
    assert ok(cli, "federation", "list", "--tenant", "acme") == ""
    (secrets_dir / "p").write_text("cs-in-the-folder\n")
    ok(cli, *add, "--client-secret-file", str(secrets_dir / "p"))
    assert ok(cli, "federation", "check") == ""
    update = ["federation", "update", "p", "--tenant", "acme"]
    assert "not under" in _refused(cli, *update, "--client-secret-file", "/etc/hostname")


def test_a_secret_from_standard_input_is_stored_sealed(cli: CliRunner, db_url: str) -> None:
    ok(cli, "tenant", "create", "acme", "--domain", "acme.test")
    ok(
        cli, "federation", "add", "p", "--tenant", "acme", "--issuer", "https://login.example",
        "--client-id", "c", "--client-secret-stdin", stdin="cs-typed-in\n",
    )  # fmt: skip
    view = json.loads(ok(cli, "federation", "list", "--tenant", "acme", "--json"))
    assert view["secret"] == "sealed"
    [(sealed, source)] = _stored(db_url)
    assert source is None
    assert sealed is not None
    assert "cs-typed-in" not in sealed
    assert SecretBox(TEST_SECRET).open(sealed) == "cs-typed-in"
    ok(cli, "federation", "update", "p", "--tenant", "acme", "--no-client-secret")
    assert _stored(db_url) == [(None, None)]


def _stored(db_url: str, source: str | None = None) -> list[tuple[str | None, str | None]]:
    """The providers' stored secrets (``source``: first store this reference in every row, as
    a version without the boundary could have)."""

    async def run() -> list[tuple[str | None, str | None]]:
        engine = create_async_engine(db_url)
        async with engine.begin() as conn:
            if source is not None:
                await conn.execute(update(ExternalProvider).values(secret_source=source))
            rows = await conn.execute(
                select(ExternalProvider.secret_sealed, ExternalProvider.secret_source)
            )
            found = [(sealed, where) for sealed, where in rows]
        await engine.dispose()
        return found

    return asyncio.run(run())


def test_check_names_the_stored_references_that_are_refused(
    cli: CliRunner, db_url: str, secrets_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ok(cli, "tenant", "create", "acme", "--domain", "acme.test")
    ok(cli, "tenant", "create", "globex", "--domain", "globex.test")
    (secrets_dir / "p").write_text("cs\n")
    for tenant in ("acme", "globex"):
        ok(
            cli, "federation", "add", "p", "--tenant", tenant, "--issuer", "https://login.example",
            "--client-id", "c", "--client-secret-file", str(secrets_dir / "p"),
        )  # fmt: skip
    assert ok(cli, "federation", "check") == ""
    # The operator moves the folder: the stored files are outside it now.
    monkeypatch.setenv("SWITCHBOARD_FEDERATION_SECRETS_DIR", str(tmp_path / "moved"))
    result = cli.invoke(main, ["federation", "check"])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "acme\tp\tthe file is not under SWITCHBOARD_FEDERATION_SECRETS_DIR",
        "globex\tp\tthe file is not under SWITCHBOARD_FEDERATION_SECRETS_DIR",
    ]
    # A reference stored before the boundary existed (a tenant's admin could name any file).
    _stored(db_url, "file:/proc/self/environ")
    monkeypatch.delenv("SWITCHBOARD_FEDERATION_SECRETS_DIR")
    result = cli.invoke(main, ["federation", "check"])
    assert result.exit_code == 1
    assert "acme\tp\tfiles are read as client secrets only under" in result.output
    # Sealed values that SWITCHBOARD_SECRET_KEY opens pass; one sealed under another key fails.
    for tenant in ("acme", "globex"):
        ok(cli, "federation", "update", "p", "--tenant", tenant, "--client-secret-stdin",
           stdin="cs-sealed\n")  # fmt: skip
    assert ok(cli, "federation", "check") == ""
    monkeypatch.setenv("SWITCHBOARD_SECRET_KEY", TEST_SECRET + "-changed")
    result = cli.invoke(main, ["federation", "check"])
    assert result.exit_code == 1
    assert "acme\tp\tthe sealed client secret cannot be opened" in result.output
