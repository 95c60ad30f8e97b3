"""Revision 0002, the linen portal's catalogue: item types, laundries and their keys and
price lists, properties and their groups.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from switchboard.kit.models import JsonType, UtcDateTime


def upgrade() -> None:
    op.create_table(
        "linen_item_types",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("code", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("category", sa.String(length=16), nullable=False),
        sa.Column("size", sa.String(length=64), nullable=True),
        sa.Column("unit", sa.String(length=8), nullable=False),
        sa.Column("weight_grams", sa.Integer(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("components", JsonType, nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_linen_item_types_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_linen_item_types")),
        sa.UniqueConstraint("tenant_id", "code", name=op.f("uq_linen_item_types_tenant_id_code")),
    )
    with op.batch_alter_table("linen_item_types", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_linen_item_types_tenant_id"), ["tenant_id"], unique=False
        )
    op.create_table(
        "linen_laundries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("contact_name", sa.String(length=200), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("phone", sa.String(length=64), nullable=False),
        sa.Column("address", JsonType, nullable=False),
        sa.Column("vat_id", sa.String(length=64), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_linen_laundries_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_linen_laundries")),
    )
    with op.batch_alter_table("linen_laundries", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_linen_laundries_tenant_id"), ["tenant_id"], unique=False
        )
    op.create_table(
        "linen_property_groups",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("notes", sa.String(length=5000), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_linen_property_groups_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_linen_property_groups")),
        sa.UniqueConstraint(
            "tenant_id", "name", name=op.f("uq_linen_property_groups_tenant_id_name")
        ),
    )
    with op.batch_alter_table("linen_property_groups", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_linen_property_groups_tenant_id"), ["tenant_id"], unique=False
        )
    op.create_table(
        "linen_laundry_keys",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("laundry_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("last_used_at", UtcDateTime(), nullable=True),
        sa.Column("revoked_at", UtcDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["laundry_id"],
            ["linen_laundries.id"],
            name=op.f("fk_linen_laundry_keys_laundry_id_linen_laundries"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_linen_laundry_keys_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_linen_laundry_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_linen_laundry_keys_key_hash")),
    )
    with op.batch_alter_table("linen_laundry_keys", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_linen_laundry_keys_laundry_id"), ["laundry_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_linen_laundry_keys_tenant_id"), ["tenant_id"], unique=False
        )
    op.create_table(
        "linen_price_lists",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("laundry_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("valid_from", sa.Date(), nullable=False),
        sa.Column("valid_to", sa.Date(), nullable=True),
        sa.Column("per_kg", sa.BigInteger(), nullable=True),
        sa.Column("delivery_fee", sa.BigInteger(), nullable=False),
        sa.Column("late_order_surcharge", sa.BigInteger(), nullable=False),
        sa.Column("items", JsonType, nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["laundry_id"],
            ["linen_laundries.id"],
            name=op.f("fk_linen_price_lists_laundry_id_linen_laundries"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_linen_price_lists_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_linen_price_lists")),
    )
    with op.batch_alter_table("linen_price_lists", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_linen_price_lists_laundry_id"), ["laundry_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_linen_price_lists_tenant_id"), ["tenant_id"], unique=False
        )
    op.create_table(
        "linen_properties",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("code", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("external_ref", sa.String(length=128), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("address", JsonType, nullable=False),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("bedrooms", sa.Integer(), nullable=False),
        sa.Column("bathrooms", sa.Integer(), nullable=False),
        sa.Column("max_guests", sa.Integer(), nullable=False),
        sa.Column("beds", JsonType, nullable=False),
        sa.Column("default_laundry_id", sa.Integer(), nullable=True),
        sa.Column("linen_par", JsonType, nullable=False),
        sa.Column("delivery_note", sa.String(length=2000), nullable=False),
        sa.Column("notes", sa.String(length=5000), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["default_laundry_id"],
            ["linen_laundries.id"],
            name=op.f("fk_linen_properties_default_laundry_id_linen_laundries"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_linen_properties_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_linen_properties")),
        sa.UniqueConstraint("tenant_id", "code", name=op.f("uq_linen_properties_tenant_id_code")),
    )
    with op.batch_alter_table("linen_properties", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_linen_properties_tenant_id"), ["tenant_id"], unique=False
        )
    op.create_table(
        "linen_group_members",
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("property_id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["linen_property_groups.id"],
            name=op.f("fk_linen_group_members_group_id_linen_property_groups"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["property_id"],
            ["linen_properties.id"],
            name=op.f("fk_linen_group_members_property_id_linen_properties"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_linen_group_members_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("group_id", "property_id", name=op.f("pk_linen_group_members")),
    )
    with op.batch_alter_table("linen_group_members", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_linen_group_members_property_id"), ["property_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_linen_group_members_tenant_id"), ["tenant_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("linen_group_members", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_group_members_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_linen_group_members_property_id"))
    op.drop_table("linen_group_members")
    with op.batch_alter_table("linen_properties", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_properties_tenant_id"))
    op.drop_table("linen_properties")
    with op.batch_alter_table("linen_price_lists", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_price_lists_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_linen_price_lists_laundry_id"))
    op.drop_table("linen_price_lists")
    with op.batch_alter_table("linen_laundry_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_laundry_keys_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_linen_laundry_keys_laundry_id"))
    op.drop_table("linen_laundry_keys")
    with op.batch_alter_table("linen_property_groups", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_property_groups_tenant_id"))
    op.drop_table("linen_property_groups")
    with op.batch_alter_table("linen_laundries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_laundries_tenant_id"))
    op.drop_table("linen_laundries")
    with op.batch_alter_table("linen_item_types", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_item_types_tenant_id"))
    op.drop_table("linen_item_types")
