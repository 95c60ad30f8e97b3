"""refresh tokens: the time of the sign-in their family came from, for the ID tokens a refresh
issues (OpenID Connect Core 12.2)

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-30 10:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from switchboard.kit.models import UtcDateTime

revision: str = "0027"
down_revision: str | Sequence[str] | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Tokens issued before it: none is known; a refresh takes the token's own creation time.
    with op.batch_alter_table("refresh_tokens") as batch:
        batch.add_column(sa.Column("auth_time", UtcDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("refresh_tokens") as batch:
        batch.drop_column("auth_time")
