"""Settings: values derived from fields follow a copy's update; lists of CIDRs are checked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from switchboard.settings import Settings


def test_a_copy_derives_its_values_from_its_own_fields(tmp_path: Path) -> None:
    settings = Settings(public_base_url="http://primary.test:8000", data_dir=tmp_path)
    assert (settings.primary_domain, settings.public_scheme) == ("primary.test:8000", "http")
    assert settings.resolved_database_url.endswith("switchboard.db")

    copy = settings.model_copy(
        update={"public_base_url": "https://other.test", "database_url": "sqlite+aiosqlite:///x.db"}
    )

    assert (copy.primary_domain, copy.public_scheme) == ("other.test", "https")
    assert copy.resolved_database_url == "sqlite+aiosqlite:///x.db"
    assert settings.primary_domain == "primary.test:8000"


def test_the_room_fanout_needs_redis_and_postgresql(tmp_path: Path) -> None:
    postgres = "postgresql+asyncpg://127.0.0.1/db"
    fanout = Settings(database_url=postgres, room_fanout_url="redis://127.0.0.1:6379/0")
    assert fanout.room_fanout_url == "redis://127.0.0.1:6379/0"
    with pytest.raises(ValidationError, match="needs PostgreSQL"):
        Settings(data_dir=tmp_path, room_fanout_url="redis://127.0.0.1:6379/0")
    with pytest.raises(ValidationError, match="redis://"):
        Settings(database_url=postgres, room_fanout_url="http://127.0.0.1:6379")


def test_the_issuer_allowance_is_a_list_of_cidrs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert Settings(data_dir=tmp_path).issuer_allow_private == ()
    monkeypatch.setenv("SWITCHBOARD_ISSUER_ALLOW_PRIVATE", "10.0.5.0/24, ::1/128")
    assert Settings(data_dir=tmp_path).issuer_allow_private == ("10.0.5.0/24", "::1/128")
    monkeypatch.setenv("SWITCHBOARD_ISSUER_ALLOW_PRIVATE", "10.0.5.0/24,keycloak")
    with pytest.raises(ValidationError):
        Settings(data_dir=tmp_path)


ROOT = Path(__file__).resolve().parent.parent


def _table_variables(doc: str, prefix: str) -> set[str]:
    """The variables named in the first column of a doc's settings table (`_X` after a full
    name abbreviates ``<prefix>_X``)."""
    names: set[str] = set()
    for line in (ROOT / doc).read_text().splitlines():
        if line.startswith(f"| `{prefix}"):
            for name in re.findall(r"`(_?[A-Z0-9_]+)`", line.split("|")[1]):
                names.add(prefix + name if name.startswith("_") else name)
    return names


def test_every_setting_has_its_row_in_the_docs_and_every_row_a_setting() -> None:
    from switchboard.relay.settings import RelaySettings

    assert _table_variables("docs/operations.md", "SWITCHBOARD_") == {
        f"SWITCHBOARD_{name.upper()}" for name in Settings.model_fields
    }
    assert _table_variables("docs/relay.md", "SWITCHBOARD_RELAY") == {
        f"SWITCHBOARD_RELAY_{name.upper()}" for name in RelaySettings.model_fields
    }
