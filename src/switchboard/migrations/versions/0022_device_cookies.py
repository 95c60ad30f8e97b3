"""device cookies: the wrong passwords typed in a browser holding a device cookie of the user
are counted apart from the user's, and lock that browser only (decision 0031)

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-29 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from switchboard.kit.changes import notify_trigger_sql
from switchboard.kit.models import UtcDateTime

revision: str = "0022"
down_revision: str | Sequence[str] | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "idp_device_failures",
        sa.Column("nonce_hash", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("locked_until", UtcDateTime(), nullable=True),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_idp_device_failures_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_idp_device_failures_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("nonce_hash", name=op.f("pk_idp_device_failures")),
    )  # fmt: skip
    op.create_index("ix_idp_device_failures_user_id", "idp_device_failures", ["user_id"])
    if op.get_bind().dialect.name == "postgresql":  # as every table since revision 0014
        for statement in notify_trigger_sql("idp_device_failures"):
            op.execute(statement)


def downgrade() -> None:
    op.drop_index("ix_idp_device_failures_user_id", table_name="idp_device_failures")
    op.drop_table("idp_device_failures")
