"""vault reveals outlive their entry: the reveal log no longer cascades from the entry, and
keeps the entry's label at each reveal (decision 0514)

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28 09:31:52.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | Sequence[str] | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FK = "fk_linen_vault_reveals_entry_id_linen_vault_entries"


def upgrade() -> None:
    with op.batch_alter_table("linen_vault_reveals") as batch:
        batch.drop_constraint(FK, type_="foreignkey")
        batch.add_column(
            sa.Column("entry_label", sa.String(length=200), nullable=False, server_default="")
        )
    op.execute(
        "UPDATE linen_vault_reveals SET entry_label = (SELECT e.label FROM linen_vault_entries e"
        " WHERE e.id = linen_vault_reveals.entry_id)"
    )
    with op.batch_alter_table("linen_vault_reveals") as batch:
        batch.alter_column("entry_label", server_default=None)


def downgrade() -> None:
    # The reveals of deleted entries cannot be kept under the old foreign key.
    op.execute(
        "DELETE FROM linen_vault_reveals WHERE entry_id NOT IN (SELECT id FROM linen_vault_entries)"
    )
    with op.batch_alter_table("linen_vault_reveals") as batch:
        batch.drop_column("entry_label")
        batch.create_foreign_key(
            FK, "linen_vault_entries", ["entry_id"], ["id"], ondelete="CASCADE"
        )
