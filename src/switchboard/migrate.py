"""Alembic, driven from the CLI: ``switchboard migrate`` applies every pending revision."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "heads") -> None:
    command.upgrade(alembic_config(url), revision)


def revision(url: str, message: str, rev_id: str, head: str = "heads") -> None:
    command.revision(
        alembic_config(url), message=message, autogenerate=True, rev_id=rev_id, head=head
    )
