"""change notifications: on PostgreSQL every table notifies channel switchboard_changes when a
transaction that changed its rows commits (the read cache's invalidation, decision 0960)

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25 21:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from switchboard.kit.changes import NOTIFY_FUNCTION, notify_trigger_sql

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _tables() -> list[str]:
    names = sa.inspect(op.get_bind()).get_table_names()
    return [name for name in names if name != "alembic_version"]


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(NOTIFY_FUNCTION)
    for table in _tables():
        for statement in notify_trigger_sql(table):
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in _tables():
        op.execute(f"DROP TRIGGER IF EXISTS switchboard_changes ON {table}")
        op.execute(f"DROP TRIGGER IF EXISTS switchboard_truncated ON {table}")
    op.execute("DROP FUNCTION IF EXISTS switchboard_notify_change()")
