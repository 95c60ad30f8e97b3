"""idempotency keys of call creation, ordered webhook deliveries, the outcome email outbox

Revision ID: 0006
Revises: 0002
Create Date: 2026-11-23 07:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from switchboard.kit.db import UtcDateTime

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "call_idempotency_keys",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("body_hash", sa.String(length=64), nullable=False),
        sa.Column("call_id", sa.String(length=16), nullable=False),
        sa.Column("response", sa.Text(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_call_idempotency_keys_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_call_idempotency_keys")),
        sa.UniqueConstraint(
            "tenant_id", "key", name=op.f("uq_call_idempotency_keys_tenant_id_key")
        ),
    )
    with op.batch_alter_table("call_idempotency_keys", schema=None) as batch_op:
        batch_op.create_index("ix_call_idempotency_keys_expires_at", ["expires_at"], unique=False)

    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("order_key", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("seq", sa.BigInteger(), nullable=False, server_default="0"))
        batch_op.create_index(
            "ix_webhook_deliveries_order", ["subscription_id", "order_key", "seq"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_deliveries_order")
        batch_op.drop_column("seq")
        batch_op.drop_column("order_key")
    with op.batch_alter_table("call_idempotency_keys", schema=None) as batch_op:
        batch_op.drop_index("ix_call_idempotency_keys_expires_at")
    op.drop_table("call_idempotency_keys")
