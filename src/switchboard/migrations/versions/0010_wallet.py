"""wallet: trusted PID issuers and OpenID4VP presentation requests

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 11:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from switchboard.kit.models import JsonType, UtcDateTime

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "wallet_issuers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("kid", sa.String(length=255), nullable=False),
        sa.Column("jwk", JsonType, nullable=False),
        sa.Column("username_claim", sa.String(length=128), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_wallet_issuers_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_wallet_issuers")),
        sa.UniqueConstraint("tenant_id", "name", name=op.f("uq_wallet_issuers_tenant_id_name")),
        sa.UniqueConstraint("tenant_id", "kid", name=op.f("uq_wallet_issuers_tenant_id_kid")),
    )
    op.create_table(
        "wallet_requests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("browser_hash", sa.String(length=64), nullable=False),
        sa.Column("nonce", sa.String(length=64), nullable=False),
        sa.Column("authorize_query", sa.String(length=16384), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("response_hash", sa.String(length=64), nullable=True),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("failure", sa.String(length=255), nullable=True),
        sa.Column("used_at", UtcDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_wallet_requests_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_wallet_requests_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_wallet_requests")),
        sa.UniqueConstraint("state", name=op.f("uq_wallet_requests_state")),
    )


def downgrade() -> None:
    op.drop_table("wallet_requests")
    op.drop_table("wallet_issuers")
