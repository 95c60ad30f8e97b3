"""credential status: the tenants' status lists and the staff credentials issued (Token Status
List), so a credential can be revoked

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25 16:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from switchboard.kit.models import UtcDateTime

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _tenant_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["tenant_id"], ["tenants.id"], name=op.f(f"fk_{table}_tenant_id_tenants"),
        ondelete="CASCADE",
    )  # fmt: skip


def upgrade() -> None:
    op.create_table(
        "vci_status_lists",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("list_id", sa.String(length=64), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("used", sa.Integer(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        _tenant_fk("vci_status_lists"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_vci_status_lists")),
        sa.UniqueConstraint("list_id", name=op.f("uq_vci_status_lists_list_id")),
    )
    op.create_table(
        "vci_credentials",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("username", sa.String(length=128), nullable=False),
        sa.Column("status_list_id", sa.Integer(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("issued_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("revoked_at", UtcDateTime(), nullable=True),
        sa.Column("revoked_reason", sa.String(length=255), nullable=True),
        _tenant_fk("vci_credentials"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_vci_credentials_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["status_list_id"], ["vci_status_lists.id"],
            name=op.f("fk_vci_credentials_status_list_id_vci_status_lists"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_vci_credentials")),
        sa.UniqueConstraint(
            "status_list_id", "idx", name=op.f("uq_vci_credentials_status_list_id_idx")
        ),
    )  # fmt: skip


def downgrade() -> None:
    op.drop_table("vci_credentials")
    op.drop_table("vci_status_lists")
