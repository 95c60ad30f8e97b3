"""webhook attempts: the log holds no foreign key and no index on its delivery; deleting a
subscription deletes its log by trigger (decision 0221)

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-29 03:00:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0026"
down_revision: str | Sequence[str] | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FOREIGN_KEY = "fk_webhook_attempts_delivery_id_webhook_deliveries"
INDEX = "ix_webhook_attempts_delivery_id"
TRIGGER = {
    "postgresql": (
        "CREATE OR REPLACE FUNCTION switchboard_drop_webhook_log() RETURNS trigger AS $$ "
        "BEGIN DELETE FROM webhook_attempts WHERE subscription_id = OLD.id; RETURN NULL; END "
        "$$ LANGUAGE plpgsql",
        "CREATE TRIGGER switchboard_drop_log AFTER DELETE ON webhook_subscriptions "
        "FOR EACH ROW EXECUTE FUNCTION switchboard_drop_webhook_log()",
    ),
    "sqlite": (
        "CREATE TRIGGER switchboard_drop_log AFTER DELETE ON webhook_subscriptions "
        "BEGIN DELETE FROM webhook_attempts WHERE subscription_id = OLD.id; END",
    ),
}
UNTRIGGER = {
    "postgresql": (
        "DROP TRIGGER IF EXISTS switchboard_drop_log ON webhook_subscriptions",
        "DROP FUNCTION IF EXISTS switchboard_drop_webhook_log()",
    ),
    "sqlite": ("DROP TRIGGER IF EXISTS switchboard_drop_log",),
}


def upgrade() -> None:
    with op.batch_alter_table("webhook_attempts") as batch:
        batch.drop_constraint(FOREIGN_KEY, type_="foreignkey")
        batch.drop_index(INDEX)
    for statement in TRIGGER[op.get_bind().dialect.name]:
        op.execute(statement)


def downgrade() -> None:
    for statement in UNTRIGGER[op.get_bind().dialect.name]:
        op.execute(statement)
    # The attempts of deliveries deleted without a cascade, which the key would refuse.
    op.execute(
        "DELETE FROM webhook_attempts WHERE delivery_id NOT IN (SELECT id FROM webhook_deliveries)"
    )
    with op.batch_alter_table("webhook_attempts") as batch:
        batch.create_index(INDEX, ["delivery_id"])
        batch.create_foreign_key(
            FOREIGN_KEY, "webhook_deliveries", ["delivery_id"], ["id"], ondelete="CASCADE"
        )
