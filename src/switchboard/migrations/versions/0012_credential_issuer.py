"""credential issuer: the tenants' issuer keys, credential offers and c_nonces (OpenID4VCI)

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25 15:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from switchboard.kit.models import JsonType, UtcDateTime

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _tenant_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["tenant_id"], ["tenants.id"], name=op.f(f"fk_{table}_tenant_id_tenants"),
        ondelete="CASCADE",
    )  # fmt: skip


def upgrade() -> None:
    op.create_table(
        "vci_issuer_keys",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("kid", sa.String(length=64), nullable=False),
        sa.Column("public_jwk", JsonType, nullable=False),
        sa.Column("private_jwk_sealed", sa.String(length=4096), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        _tenant_fk("vci_issuer_keys"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_vci_issuer_keys")),
        sa.UniqueConstraint("kid", name=op.f("uq_vci_issuer_keys_kid")),
    )
    op.create_table(
        "vci_offers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("tx_code_hash", sa.String(length=64), nullable=True),
        sa.Column("tx_code_failures", sa.Integer(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("redeemed_at", UtcDateTime(), nullable=True),
        sa.Column("token_hash", sa.String(length=64), nullable=True),
        sa.Column("token_expires_at", UtcDateTime(), nullable=True),
        sa.Column("issued_at", UtcDateTime(), nullable=True),
        _tenant_fk("vci_offers"),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_vci_offers_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_vci_offers")),
        sa.UniqueConstraint("code_hash", name=op.f("uq_vci_offers_code_hash")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_vci_offers_token_hash")),
    )
    op.create_table(
        "vci_nonces",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("nonce", sa.String(length=64), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        _tenant_fk("vci_nonces"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_vci_nonces")),
        sa.UniqueConstraint("nonce", name=op.f("uq_vci_nonces_nonce")),
    )


def downgrade() -> None:
    op.drop_table("vci_nonces")
    op.drop_table("vci_offers")
    op.drop_table("vci_issuer_keys")
