"""unknown usernames: wrong passwords typed for a name no user has are counted and locked as a
user's are, under a keyed hash of the name; a tally quiet for a day starts again (decision 0006)

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-30 12:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from switchboard.kit.changes import notify_trigger_sql
from switchboard.kit.models import UtcDateTime

revision: str = "0028"
down_revision: str | Sequence[str] | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "idp_unknown_user_failures",
        sa.Column("name_hash", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("locked_until", UtcDateTime(), nullable=True),
        sa.Column("failed_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"],
            name=op.f("fk_idp_unknown_user_failures_tenant_id_tenants"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("name_hash", name=op.f("pk_idp_unknown_user_failures")),
    )  # fmt: skip
    op.create_index(
        "ix_idp_unknown_user_failures_failed_at", "idp_unknown_user_failures", ["failed_at"]
    )
    if op.get_bind().dialect.name == "postgresql":  # as every table since revision 0014
        for statement in notify_trigger_sql("idp_unknown_user_failures"):
            op.execute(statement)
    # Users' tallies from before it have no time: they go on as they were until the next failure.
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("failed_login_at", UtcDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_column("failed_login_at")
    op.drop_index("ix_idp_unknown_user_failures_failed_at", table_name="idp_unknown_user_failures")
    op.drop_table("idp_unknown_user_failures")
