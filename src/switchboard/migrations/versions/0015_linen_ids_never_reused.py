"""linen ids never reused: on SQLite the linen tables whose ids the portal shows become
AUTOINCREMENT tables (decision 0512); PostgreSQL's sequences never go back, nothing to do

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28 09:28:10.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = (
    "linen_item_types",
    "linen_laundries",
    "linen_laundry_keys",
    "linen_price_lists",
    "linen_properties",
    "linen_property_groups",
    "linen_invoices",
    "linen_sheets",
    "linen_vault_entries",
)


def _rebuild(autoincrement: bool) -> None:
    """SQLite cannot alter a table into AUTOINCREMENT: each is copied into a new one (the
    batch's copy, rename and index rebuild). Foreign keys are not enforced on the migration's
    connection (``migrations/env.py``), so the tables that refer to these keep their rows and
    references; the copy sets each table's AUTOINCREMENT counter to its largest id."""
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    if bind.exec_driver_sql("PRAGMA foreign_keys").scalar():
        # Dropping the old tables would then delete (cascade) the rows that refer to them.
        raise RuntimeError("revision 0015 rebuilds tables: run it with foreign keys off")
    for table in TABLES:
        with op.batch_alter_table(
            table, recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
        ):
            pass


def upgrade() -> None:
    _rebuild(True)


def downgrade() -> None:
    _rebuild(False)
