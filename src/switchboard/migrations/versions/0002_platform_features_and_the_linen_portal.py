"""platform features and the linen portal

Transcript search needs backend-specific objects the models cannot express portably: the
pg_trgm extension and a GIN trigram index on PostgreSQL, an FTS5 trigram table kept in sync by
triggers on SQLite.

The statements are in ``switchboard/migrations/tables/``: the platform's tables, then the linen
portal's catalogue and its records (the platform's and the portal's tables refer to none of the
other's).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 20:56:27.647103
"""

from collections.abc import Sequence

from switchboard.migrations.tables import (
    r0002_linen_catalogue,
    r0002_linen_records,
    r0002_platform,
)

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    r0002_platform.upgrade()
    r0002_linen_catalogue.upgrade()
    r0002_linen_records.upgrade()


def downgrade() -> None:
    r0002_linen_records.downgrade()
    r0002_linen_catalogue.downgrade()
    r0002_platform.downgrade()
