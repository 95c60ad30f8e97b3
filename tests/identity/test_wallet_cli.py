"""``switchboard wallet issuer ...``: the PID issuers a tenant trusts, managed from the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from jwcrypto.jwk import JWK

from switchboard.cli import main
from tests.cli.conftest import ok


def test_add_list_remove(cli: CliRunner, tmp_path: Path, db_url: str) -> None:
    ok(cli, "tenant", "create", "acme", "--domain", "acme.test")
    key = JWK.generate(kty="EC", crv="P-256")
    # A private key given by mistake: only its public part is kept.
    jwk_file = tmp_path / "issuer.jwk"
    jwk_file.write_text(key.export_private())
    added = ok(
        cli, "wallet", "issuer", "add", "pid", "--tenant", "acme", "--jwk-file", str(jwk_file),
        "--username-claim", "personal_administrative_number",
    )  # fmt: skip
    assert added.split("\t")[:2] == ["pid", key.thumbprint()]
    view = json.loads(ok(cli, "wallet", "issuer", "list", "--tenant", "acme", "--json"))
    assert view["usernameClaim"] == "personal_administrative_number"
    assert view["kid"] == key.thumbprint()
    assert "d" not in view["jwk"]
    assert view["jwk"]["x"] == key.export_public(as_dict=True)["x"]
    again = cli.invoke(
        main, ["wallet", "issuer", "add", "other", "--tenant", "acme", "--jwk-file", "-",
               "--username-claim", "sub"], input=key.export_public(),
    )  # fmt: skip
    assert again.exit_code == 2
    assert "already exists" in again.output
    bad = cli.invoke(
        main, ["wallet", "issuer", "add", "x", "--tenant", "acme", "--jwk-file", "-",
               "--username-claim", "sub"], input='{"kty": "oct", "k": "c2VjcmV0"}',
    )  # fmt: skip
    assert bad.exit_code == 2
    assert "not a public JWK" in bad.output
    ok(cli, "wallet", "issuer", "remove", "pid", "--tenant", "acme")
    assert ok(cli, "wallet", "issuer", "list", "--tenant", "acme") == ""
