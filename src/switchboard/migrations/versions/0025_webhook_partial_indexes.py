"""webhook deliveries: the due index holds pending rows only and the replay index failed rows
only, so a delivery that succeeds is written to neither (decision 0220)

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-29 03:00:00.000000
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | Sequence[str] | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "webhook_deliveries"


def _only(status: str) -> dict[str, Any]:
    where = sa.text(f"status = '{status}'")
    return {"postgresql_where": where, "sqlite_where": where}


def upgrade() -> None:
    op.drop_index("ix_webhook_deliveries_due", table_name=TABLE)
    op.create_index("ix_webhook_deliveries_due", TABLE, ["next_attempt_at"], **_only("pending"))
    op.drop_index("ix_webhook_deliveries_subscription", table_name=TABLE)
    op.create_index(
        "ix_webhook_deliveries_failed", TABLE, ["subscription_id", "created_at"], **_only("failed")
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_failed", table_name=TABLE)
    op.create_index("ix_webhook_deliveries_subscription", TABLE, ["subscription_id", "created_at"])
    op.drop_index("ix_webhook_deliveries_due", table_name=TABLE)
    op.create_index("ix_webhook_deliveries_due", TABLE, ["status", "next_attempt_at"])
