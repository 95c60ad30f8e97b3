"""relay acl

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 06:50:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from switchboard.kit.models import UtcDateTime

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "relay_acl_rules",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("subject", sa.String(length=8), nullable=False),
        sa.Column("value", sa.String(length=64), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("note", sa.String(length=200), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_relay_acl_rules")),
        sa.UniqueConstraint(
            "subject", "value", "scope", name=op.f("uq_relay_acl_rules_subject_value_scope")
        ),
    )


def downgrade() -> None:
    op.drop_table("relay_acl_rules")
