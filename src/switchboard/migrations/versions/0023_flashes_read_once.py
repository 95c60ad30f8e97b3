"""flashes read once: the values a web page shows once after a redirect are kept on the server,
sealed, and deleted as they are read, so that a copy of the flash cookie shows nothing
(decision 0602)

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-30 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from switchboard.kit.changes import notify_trigger_sql
from switchboard.kit.models import UtcDateTime

revision: str = "0023"
down_revision: str | Sequence[str] | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A flash cookie sealed before this revision carries its values and no id: the page it
    # names shows the plain page (within five minutes of the upgrade only).
    op.create_table(
        "web_flashes",
        sa.Column("id_hash", sa.String(length=64), nullable=False),
        sa.Column("values_sealed", sa.Text(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id_hash", name=op.f("pk_web_flashes")),
    )
    if op.get_bind().dialect.name == "postgresql":  # as every table since revision 0014
        for statement in notify_trigger_sql("web_flashes"):
            op.execute(statement)


def downgrade() -> None:
    op.drop_table("web_flashes")
