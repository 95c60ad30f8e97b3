"""idempotency keys of call creation, ordered webhook deliveries, the outcome email outbox

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 07:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from switchboard.kit.models import UtcDateTime

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
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

    op.create_table(
        "outcome_emails",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("call_id", sa.String(length=32), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("recipient", sa.String(length=254), nullable=False),
        sa.Column("message", sa.LargeBinary(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("next_attempt_at", UtcDateTime(), nullable=False),
        sa.Column("lease_token", sa.String(length=32), nullable=True),
        sa.Column("lease_until", UtcDateTime(), nullable=True),
        sa.Column("completed_at", UtcDateTime(), nullable=True),
        sa.Column("last_error", sa.String(length=300), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_outcome_emails_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outcome_emails")),
    )
    with op.batch_alter_table("outcome_emails", schema=None) as batch_op:
        batch_op.create_index("ix_outcome_emails_due", ["status", "next_attempt_at"], unique=False)
        batch_op.create_index(
            "ix_outcome_emails_tenant_call", ["tenant_id", "call_id"], unique=False
        )
    op.create_table(
        "outcome_email_attempts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("email_id", sa.String(length=32), nullable=False),
        sa.Column("try_number", sa.Integer(), nullable=False),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("smtp_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.String(length=300), nullable=True),
        sa.ForeignKeyConstraint(
            ["email_id"],
            ["outcome_emails.id"],
            name=op.f("fk_outcome_email_attempts_email_id_outcome_emails"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_outcome_email_attempts_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outcome_email_attempts")),
    )
    with op.batch_alter_table("outcome_email_attempts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_outcome_email_attempts_email_id"), ["email_id"], unique=False
        )

    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("order_key", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("seq", sa.BigInteger(), nullable=False, server_default="0"))
        batch_op.create_index(
            "ix_webhook_deliveries_order", ["subscription_id", "order_key", "seq"], unique=False
        )


def downgrade() -> None:
    op.drop_table("outcome_email_attempts")
    op.drop_table("outcome_emails")
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_deliveries_order")
        batch_op.drop_column("seq")
        batch_op.drop_column("order_key")
    with op.batch_alter_table("call_idempotency_keys", schema=None) as batch_op:
        batch_op.drop_index("ix_call_idempotency_keys_expires_at")
    op.drop_table("call_idempotency_keys")
