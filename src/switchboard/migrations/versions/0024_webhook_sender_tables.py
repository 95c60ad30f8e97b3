"""webhook sender tables: the delivery log's only foreign key is its delivery's; on PostgreSQL
the deliveries' pages keep half their room for a leased row's new version, and neither table
notifies the change version (decisions 0216 and 0217)

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-28 23:50:00.000000
"""

from collections.abc import Sequence

from alembic import op

from switchboard.kit.changes import notify_trigger_sql

revision: str = "0024"
down_revision: str | Sequence[str] | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UNWATCHED = ("webhook_deliveries", "webhook_attempts")
# The log's references that its delivery's own cascades already cover.
REFERENCES = (
    ("fk_webhook_attempts_tenant_id_tenants", "tenants", "tenant_id"),
    (
        "fk_webhook_attempts_subscription_id_webhook_subscriptions",
        "webhook_subscriptions",
        "subscription_id",
    ),
)


def upgrade() -> None:
    with op.batch_alter_table("webhook_attempts") as batch:
        for name, _table, _column in REFERENCES:
            batch.drop_constraint(name, type_="foreignkey")
    if op.get_bind().dialect.name != "postgresql":
        return
    # New pages only: the pages written so far fill up as they are now, and are left as they
    # are (rewriting the table would hold it locked for as long as the copy takes).
    op.execute("ALTER TABLE webhook_deliveries SET (fillfactor = 50)")
    for table in UNWATCHED:
        op.execute(f"DROP TRIGGER IF EXISTS switchboard_changes ON {table}")
        op.execute(f"DROP TRIGGER IF EXISTS switchboard_truncated ON {table}")


def downgrade() -> None:
    with op.batch_alter_table("webhook_attempts") as batch:
        for name, table, column in REFERENCES:
            batch.create_foreign_key(name, table, [column], ["id"], ondelete="CASCADE")
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE webhook_deliveries RESET (fillfactor)")
    for table in UNWATCHED:
        for statement in notify_trigger_sql(table):
            op.execute(statement)
