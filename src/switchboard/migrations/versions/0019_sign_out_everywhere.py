"""sign out everywhere: a security stamp per user, which the web apps' session cookies carry a
digest of; a new one ends every session of the user (decision 0604)

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28 15:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | Sequence[str] | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Every user starts with an empty stamp, with which a session's credential stamp is what it
    # was before this revision: no one signed in to a web app is signed out by the upgrade.
    with op.batch_alter_table("users") as batch:
        batch.add_column(
            sa.Column("security_stamp", sa.String(length=64), nullable=False, server_default="")
        )


def downgrade() -> None:
    # Sessions signed in after a user was signed out everywhere end: their stamp included it.
    with op.batch_alter_table("users") as batch:
        batch.drop_column("security_stamp")
