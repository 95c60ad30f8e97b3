"""Revision 0002, the linen portal's records: sheets, invoices and their PDFs, the vault and
its reveals.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from switchboard.kit.models import UtcDateTime


def upgrade() -> None:
    op.create_table(
        "linen_invoices",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("laundry_id", sa.Integer(), nullable=False),
        sa.Column("invoice_number", sa.String(length=64), nullable=False),
        sa.Column("invoice_date", sa.Date(), nullable=False),
        sa.Column("period_from", sa.Date(), nullable=True),
        sa.Column("period_to", sa.Date(), nullable=True),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("net", sa.BigInteger(), nullable=False),
        sa.Column("tax", sa.BigInteger(), nullable=False),
        sa.Column("gross", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("pdf_filename", sa.String(length=255), nullable=False),
        sa.Column("pdf_size", sa.BigInteger(), nullable=False),
        sa.Column("pdf_sha256", sa.String(length=64), nullable=False),
        sa.Column("received_at", UtcDateTime(), nullable=False),
        sa.Column("approved_at", UtcDateTime(), nullable=True),
        sa.Column("approved_by", sa.String(length=128), nullable=True),
        sa.Column("disputed_at", UtcDateTime(), nullable=True),
        sa.Column("dispute_reason", sa.String(length=2000), nullable=False),
        sa.Column("paid_at", UtcDateTime(), nullable=True),
        sa.Column("payment_ref", sa.String(length=128), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["laundry_id"],
            ["linen_laundries.id"],
            name=op.f("fk_linen_invoices_laundry_id_linen_laundries"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_linen_invoices_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_linen_invoices")),
        sa.UniqueConstraint(
            "laundry_id", "invoice_number", name=op.f("uq_linen_invoices_laundry_id_invoice_number")
        ),
    )
    with op.batch_alter_table("linen_invoices", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_linen_invoices_tenant_id"), ["tenant_id"], unique=False
        )
    op.create_table(
        "linen_invoice_pdfs",
        sa.Column("invoice_id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["invoice_id"],
            ["linen_invoices.id"],
            name=op.f("fk_linen_invoice_pdfs_invoice_id_linen_invoices"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_linen_invoice_pdfs_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("invoice_id", name=op.f("pk_linen_invoice_pdfs")),
    )
    with op.batch_alter_table("linen_invoice_pdfs", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_linen_invoice_pdfs_tenant_id"), ["tenant_id"], unique=False
        )
    op.create_table(
        "linen_sheets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.String(length=32), nullable=False),
        sa.Column("year", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("property_id", sa.Integer(), nullable=False),
        sa.Column("laundry_id", sa.Integer(), nullable=False),
        sa.Column("service_date", sa.Date(), nullable=False),
        sa.Column("pickup_date", sa.Date(), nullable=True),
        sa.Column("reason", sa.String(length=16), nullable=False),
        sa.Column("booking_ref", sa.String(length=128), nullable=False),
        sa.Column("guest_count", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("late_order", sa.Boolean(), nullable=False),
        sa.Column("confirmed_at", UtcDateTime(), nullable=True),
        sa.Column("confirmed_by", sa.String(length=128), nullable=True),
        sa.Column("delivered_at", UtcDateTime(), nullable=True),
        sa.Column("reported_by", sa.String(length=128), nullable=True),
        sa.Column("cancelled_at", UtcDateTime(), nullable=True),
        sa.Column("cancelled_by", sa.String(length=128), nullable=True),
        sa.Column("cancel_reason", sa.String(length=500), nullable=False),
        sa.Column("invoice_id", sa.Integer(), nullable=True),
        sa.Column("weight_grams", sa.BigInteger(), nullable=False),
        sa.Column("estimated_cost", sa.BigInteger(), nullable=True),
        sa.Column("currency", sa.String(length=3), nullable=True),
        sa.Column("notes", sa.String(length=5000), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["invoice_id"],
            ["linen_invoices.id"],
            name=op.f("fk_linen_sheets_invoice_id_linen_invoices"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["laundry_id"],
            ["linen_laundries.id"],
            name=op.f("fk_linen_sheets_laundry_id_linen_laundries"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["property_id"],
            ["linen_properties.id"],
            name=op.f("fk_linen_sheets_property_id_linen_properties"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_linen_sheets_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_linen_sheets")),
        sa.UniqueConstraint("tenant_id", "number", name=op.f("uq_linen_sheets_tenant_id_number")),
    )
    with op.batch_alter_table("linen_sheets", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_linen_sheets_invoice_id"), ["invoice_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_linen_sheets_property_id"), ["property_id"], unique=False
        )
        batch_op.create_index(
            "ix_linen_sheets_tenant_date", ["tenant_id", "service_date"], unique=False
        )
        batch_op.create_index(
            "ix_linen_sheets_tenant_laundry_updated",
            ["tenant_id", "laundry_id", "updated_at"],
            unique=False,
        )
    op.create_table(
        "linen_vault_entries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("property_id", sa.Integer(), nullable=True),
        sa.Column("group_id", sa.Integer(), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=False),
        sa.Column("secret_sealed", sa.String(length=8192), nullable=False),
        sa.Column("valid_from", sa.Date(), nullable=True),
        sa.Column("valid_to", sa.Date(), nullable=True),
        sa.Column("notes", sa.String(length=2000), nullable=False),
        sa.Column("rotated_at", UtcDateTime(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.Column("updated_by", sa.String(length=128), nullable=False),
        sa.CheckConstraint(
            "(property_id IS NULL) <> (group_id IS NULL)",
            name=op.f("ck_linen_vault_entries_one_owner"),
        ),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["linen_property_groups.id"],
            name=op.f("fk_linen_vault_entries_group_id_linen_property_groups"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["property_id"],
            ["linen_properties.id"],
            name=op.f("fk_linen_vault_entries_property_id_linen_properties"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_linen_vault_entries_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_linen_vault_entries")),
    )
    with op.batch_alter_table("linen_vault_entries", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_linen_vault_entries_group_id"), ["group_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_linen_vault_entries_property_id"), ["property_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_linen_vault_entries_tenant_id"), ["tenant_id"], unique=False
        )
    op.create_table(
        "linen_invoice_lines",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("invoice_id", sa.Integer(), nullable=False),
        sa.Column("linen_sheet_id", sa.Integer(), nullable=True),
        sa.Column("property_id", sa.Integer(), nullable=True),
        sa.Column("description", sa.String(length=500), nullable=False),
        sa.Column("qty", sa.Integer(), nullable=False),
        sa.Column("unit_price", sa.BigInteger(), nullable=False),
        sa.Column("net", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["invoice_id"],
            ["linen_invoices.id"],
            name=op.f("fk_linen_invoice_lines_invoice_id_linen_invoices"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["linen_sheet_id"],
            ["linen_sheets.id"],
            name=op.f("fk_linen_invoice_lines_linen_sheet_id_linen_sheets"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["property_id"],
            ["linen_properties.id"],
            name=op.f("fk_linen_invoice_lines_property_id_linen_properties"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_linen_invoice_lines_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_linen_invoice_lines")),
    )
    with op.batch_alter_table("linen_invoice_lines", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_linen_invoice_lines_invoice_id"), ["invoice_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_linen_invoice_lines_linen_sheet_id"), ["linen_sheet_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_linen_invoice_lines_tenant_id"), ["tenant_id"], unique=False
        )
    op.create_table(
        "linen_sheet_lines",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("sheet_id", sa.Integer(), nullable=False),
        sa.Column("item_type_id", sa.Integer(), nullable=False),
        sa.Column("qty_ordered", sa.Integer(), nullable=False),
        sa.Column("qty_delivered", sa.Integer(), nullable=False),
        sa.Column("qty_collected", sa.Integer(), nullable=False),
        sa.Column("qty_rejected", sa.Integer(), nullable=False),
        sa.Column("note", sa.String(length=500), nullable=False),
        sa.ForeignKeyConstraint(
            ["item_type_id"],
            ["linen_item_types.id"],
            name=op.f("fk_linen_sheet_lines_item_type_id_linen_item_types"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["sheet_id"],
            ["linen_sheets.id"],
            name=op.f("fk_linen_sheet_lines_sheet_id_linen_sheets"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_linen_sheet_lines_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_linen_sheet_lines")),
        sa.UniqueConstraint(
            "sheet_id", "item_type_id", name=op.f("uq_linen_sheet_lines_sheet_id_item_type_id")
        ),
    )
    with op.batch_alter_table("linen_sheet_lines", schema=None) as batch_op:
        batch_op.create_index(
            "ix_linen_sheet_lines_counts",
            ["sheet_id", "item_type_id", "qty_ordered", "qty_delivered"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_linen_sheet_lines_item_type_id"), ["item_type_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_linen_sheet_lines_tenant_id"), ["tenant_id"], unique=False
        )
    op.create_table(
        "linen_vault_reveals",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("entry_id", sa.Integer(), nullable=False),
        sa.Column("subject", sa.String(length=128), nullable=False),
        sa.Column("username", sa.String(length=128), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("revealed_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["entry_id"],
            ["linen_vault_entries.id"],
            name=op.f("fk_linen_vault_reveals_entry_id_linen_vault_entries"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_linen_vault_reveals_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_linen_vault_reveals")),
    )
    with op.batch_alter_table("linen_vault_reveals", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_linen_vault_reveals_entry_id"), ["entry_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_linen_vault_reveals_tenant_id"), ["tenant_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("linen_vault_reveals", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_vault_reveals_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_linen_vault_reveals_entry_id"))
    op.drop_table("linen_vault_reveals")
    with op.batch_alter_table("linen_sheet_lines", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_sheet_lines_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_linen_sheet_lines_item_type_id"))
        batch_op.drop_index("ix_linen_sheet_lines_counts")
    op.drop_table("linen_sheet_lines")
    with op.batch_alter_table("linen_invoice_lines", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_invoice_lines_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_linen_invoice_lines_linen_sheet_id"))
        batch_op.drop_index(batch_op.f("ix_linen_invoice_lines_invoice_id"))
    op.drop_table("linen_invoice_lines")
    with op.batch_alter_table("linen_vault_entries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_vault_entries_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_linen_vault_entries_property_id"))
        batch_op.drop_index(batch_op.f("ix_linen_vault_entries_group_id"))
    op.drop_table("linen_vault_entries")
    with op.batch_alter_table("linen_sheets", schema=None) as batch_op:
        batch_op.drop_index("ix_linen_sheets_tenant_laundry_updated")
        batch_op.drop_index("ix_linen_sheets_tenant_date")
        batch_op.drop_index(batch_op.f("ix_linen_sheets_property_id"))
        batch_op.drop_index(batch_op.f("ix_linen_sheets_invoice_id"))
    op.drop_table("linen_sheets")
    with op.batch_alter_table("linen_invoice_pdfs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_invoice_pdfs_tenant_id"))
    op.drop_table("linen_invoice_pdfs")
    with op.batch_alter_table("linen_invoices", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_invoices_tenant_id"))
    op.drop_table("linen_invoices")
