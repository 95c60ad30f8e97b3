"""Settings: values derived from fields follow a copy's update."""

from __future__ import annotations

from pathlib import Path

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
