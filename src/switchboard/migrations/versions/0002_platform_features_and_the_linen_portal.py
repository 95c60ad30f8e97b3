"""platform features and the linen portal

Transcript search needs backend-specific objects the models cannot express portably: the
pg_trgm extension and a GIN trigram index on PostgreSQL, an FTS5 trigram table kept in sync by
triggers on SQLite.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 20:56:27.647103
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from switchboard.kit.db import JsonType
from switchboard.kit.db import UtcDateTime

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


SQLITE_FTS = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS transcripts_fts USING fts5("
    "search_text, content='transcripts', content_rowid='id', tokenize='trigram')",
    "CREATE TRIGGER IF NOT EXISTS transcripts_fts_ai AFTER INSERT ON transcripts BEGIN "
    "INSERT INTO transcripts_fts(rowid, search_text) VALUES (new.id, new.search_text); END",
    "CREATE TRIGGER IF NOT EXISTS transcripts_fts_ad AFTER DELETE ON transcripts BEGIN "
    "INSERT INTO transcripts_fts(transcripts_fts, rowid, search_text) "
    "VALUES ('delete', old.id, old.search_text); END",
    "CREATE TRIGGER IF NOT EXISTS transcripts_fts_au AFTER UPDATE OF search_text ON transcripts "
    "BEGIN INSERT INTO transcripts_fts(transcripts_fts, rowid, search_text) "
    "VALUES ('delete', old.id, old.search_text); "
    "INSERT INTO transcripts_fts(rowid, search_text) VALUES (new.id, new.search_text); END",
)


def _dialect() -> str:
    return op.get_bind().dialect.name


def upgrade() -> None:
    if _dialect() == "postgresql":
        op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    op.create_table(
        "calls",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("call_id", sa.String(length=16), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("requested_by", sa.String(length=128), nullable=False),
        sa.Column("phone", sa.String(length=32), nullable=False),
        sa.Column("display_name", sa.String(length=128), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("voice", sa.String(length=32), nullable=False),
        sa.Column("language", sa.String(length=35), nullable=False),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("system_prompt_sealed", sa.Text(), nullable=False),
        sa.Column("api_key_sealed", sa.Text(), nullable=False),
        sa.Column("max_seconds", sa.Integer(), nullable=False),
        sa.Column("retry_delay_minutes", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("retries_left", sa.Integer(), nullable=False),
        sa.Column("trunk_ids", JsonType, nullable=False),
        sa.Column("trunk_id", sa.String(length=128), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("scheduled_for", UtcDateTime(), nullable=True),
        sa.Column("due_at", UtcDateTime(), nullable=True),
        sa.Column("dispatched_at", UtcDateTime(), nullable=True),
        sa.Column("answered_at", UtcDateTime(), nullable=True),
        sa.Column("ai_started_at", UtcDateTime(), nullable=True),
        sa.Column("transferred_at", UtcDateTime(), nullable=True),
        sa.Column("ended_at", UtcDateTime(), nullable=True),
        sa.Column("ended_reason", sa.String(length=32), nullable=False),
        sa.Column("outcome", sa.String(length=32), nullable=False),
        sa.Column("duration_sec", sa.Integer(), nullable=False),
        sa.Column("transcript_path", sa.String(length=255), nullable=False),
        sa.Column("error_detail", sa.String(length=500), nullable=False),
        sa.Column("cancelled_by", sa.String(length=128), nullable=False),
        sa.Column("attempt_open", sa.Boolean(), nullable=False),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column("lease_until", UtcDateTime(), nullable=True),
        sa.Column("deadline_at", UtcDateTime(), nullable=True),
        sa.Column("dial_failures", sa.Integer(), nullable=False),
        sa.Column("bridge_reply", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_calls_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_calls")),
        sa.UniqueConstraint("call_id", name=op.f("uq_calls_call_id")),
    )
    with op.batch_alter_table("calls", schema=None) as batch_op:
        batch_op.create_index(
            "ix_calls_attempt_open_deadline_at", ["attempt_open", "deadline_at"], unique=False
        )
        batch_op.create_index("ix_calls_lease_owner", ["lease_owner"], unique=False)
        batch_op.create_index("ix_calls_status_due_at", ["status", "due_at"], unique=False)
        batch_op.create_index(
            "ix_calls_status_lease_until", ["status", "lease_until"], unique=False
        )
        batch_op.create_index("ix_calls_tenant_id_id", ["tenant_id", "id"], unique=False)

    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("payload", JsonType, nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_events_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.create_index("ix_events_created_at", ["created_at"], unique=False)
        batch_op.create_index("ix_events_tenant_created", ["tenant_id", "id"], unique=False)

    op.create_table(
        "inbound_calls",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("call_id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("number", sa.String(length=64), nullable=False),
        sa.Column("from_number", sa.String(length=64), nullable=False),
        sa.Column("room", sa.String(length=128), nullable=False),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("answered_at", UtcDateTime(), nullable=True),
        sa.Column("ai_started_at", UtcDateTime(), nullable=True),
        sa.Column("transferred_at", UtcDateTime(), nullable=True),
        sa.Column("ended_at", UtcDateTime(), nullable=True),
        sa.Column("outcome", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_inbound_calls_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inbound_calls")),
        sa.UniqueConstraint("call_id", name=op.f("uq_inbound_calls_call_id")),
    )
    op.create_table(
        "inbound_routes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("did", sa.String(length=128), nullable=False),
        sa.Column("from_number", sa.String(length=128), nullable=False),
        sa.Column("user", sa.String(length=128), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_inbound_routes_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inbound_routes")),
    )
    with op.batch_alter_table("inbound_routes", schema=None) as batch_op:
        batch_op.create_index(
            "ix_inbound_routes_tenant_position", ["tenant_id", "position"], unique=False
        )

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
        "outbound_routes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("match", sa.String(length=128), nullable=False),
        sa.Column("trunk_ids", JsonType, nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_outbound_routes_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outbound_routes")),
        sa.UniqueConstraint("tenant_id", "match", name=op.f("uq_outbound_routes_tenant_id_match")),
    )
    with op.batch_alter_table("outbound_routes", schema=None) as batch_op:
        batch_op.create_index(
            "ix_outbound_routes_tenant_position", ["tenant_id", "position"], unique=False
        )

    op.create_table(
        "routing_revisions",
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("inbound", sa.String(length=32), nullable=False),
        sa.Column("outbound", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_routing_revisions_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_routing_revisions")),
    )
    op.create_table(
        "transcripts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("call_id", sa.String(length=64), nullable=False),
        sa.Column("caller_source", sa.String(length=32), nullable=False),
        sa.Column("requested_by", sa.String(length=255), nullable=False),
        sa.Column("phone", sa.String(length=64), nullable=False),
        sa.Column("display_name", sa.String(length=255), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("number", sa.String(length=64), nullable=False),
        sa.Column("rule", sa.String(length=255), nullable=False),
        sa.Column("voice", sa.String(length=32), nullable=False),
        sa.Column("language", sa.String(length=35), nullable=False),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("trunk_id", sa.String(length=128), nullable=False),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("answered_at", UtcDateTime(), nullable=True),
        sa.Column("ended_at", UtcDateTime(), nullable=False),
        sa.Column("saved_at", UtcDateTime(), nullable=False),
        sa.Column("duration_sec", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.String(length=64), nullable=False),
        sa.Column("error_detail", sa.Text(), nullable=False),
        sa.Column("tokens_prompt", sa.Integer(), nullable=False),
        sa.Column("tokens_total", sa.Integer(), nullable=False),
        sa.Column("input_turns", sa.Integer(), nullable=False),
        sa.Column("output_turns", sa.Integer(), nullable=False),
        sa.Column("turn_count", sa.Integer(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("file", sa.String(length=255), nullable=False),
        sa.Column("search_text", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_transcripts_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_transcripts")),
        sa.UniqueConstraint("tenant_id", "call_id", name=op.f("uq_transcripts_tenant_id_call_id")),
    )
    with op.batch_alter_table("transcripts", schema=None) as batch_op:
        if _dialect() == "postgresql":
            batch_op.create_index(
                "ix_transcripts_search_trgm",
                ["search_text"],
                unique=False,
                postgresql_using="gin",
                postgresql_ops={"search_text": "gin_trgm_ops"},
            )
        batch_op.create_index(
            "ix_transcripts_tenant_started", ["tenant_id", "started_at", "id"], unique=False
        )
    if _dialect() == "sqlite":
        for statement in SQLITE_FTS:
            op.execute(statement)

    op.create_table(
        "virtual_numbers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("number", sa.String(length=32), nullable=False),
        sa.Column("mode", sa.String(length=32), nullable=False),
        sa.Column("voice", sa.String(length=32), nullable=False),
        sa.Column("language", sa.String(length=35), nullable=False),
        sa.Column("save_transcripts", sa.Boolean(), nullable=False),
        sa.Column("max_duration_sec", sa.Integer(), nullable=False),
        sa.Column("visibility", sa.String(length=16), nullable=False),
        sa.Column("api_key_sealed", sa.String(length=4096), nullable=False),
        sa.Column("system_prompt_sealed", sa.String(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_virtual_numbers_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_virtual_numbers")),
        sa.UniqueConstraint(
            "tenant_id", "number", name=op.f("uq_virtual_numbers_tenant_id_number")
        ),
    )
    op.create_table(
        "webhook_subscriptions",
        sa.Column("id", sa.String(length=16), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("events", JsonType, nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("secret_sealed", sa.String(length=512), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("last_fired_at", UtcDateTime(), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_webhook_subscriptions_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_subscriptions")),
    )
    with op.batch_alter_table("webhook_subscriptions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_webhook_subscriptions_tenant", ["tenant_id", "created_at"], unique=False
        )

    op.create_table(
        "whitelists",
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("numbers", sa.JSON(), nullable=False),
        sa.Column("comments", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_whitelists_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_whitelists")),
    )
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
        "webhook_deliveries",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("subscription_id", sa.String(length=16), nullable=False),
        sa.Column("event", sa.String(length=64), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("next_attempt_at", UtcDateTime(), nullable=False),
        sa.Column("lease_token", sa.String(length=32), nullable=True),
        sa.Column("lease_until", UtcDateTime(), nullable=True),
        sa.Column("completed_at", UtcDateTime(), nullable=True),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.String(length=200), nullable=True),
        sa.ForeignKeyConstraint(
            ["subscription_id"],
            ["webhook_subscriptions.id"],
            name=op.f("fk_webhook_deliveries_subscription_id_webhook_subscriptions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_webhook_deliveries_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
    )
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.create_index(
            "ix_webhook_deliveries_due", ["status", "next_attempt_at"], unique=False
        )
        batch_op.create_index(
            "ix_webhook_deliveries_subscription", ["subscription_id", "created_at"], unique=False
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
        "webhook_attempts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("subscription_id", sa.String(length=16), nullable=False),
        sa.Column("delivery_id", sa.String(length=32), nullable=False),
        sa.Column("event", sa.String(length=64), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("error", sa.String(length=200), nullable=True),
        sa.Column("response_snippet", sa.String(length=512), nullable=False),
        sa.ForeignKeyConstraint(
            ["delivery_id"],
            ["webhook_deliveries.id"],
            name=op.f("fk_webhook_attempts_delivery_id_webhook_deliveries"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["subscription_id"],
            ["webhook_subscriptions.id"],
            name=op.f("fk_webhook_attempts_subscription_id_webhook_subscriptions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_webhook_attempts_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_attempts")),
    )
    with op.batch_alter_table("webhook_attempts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_webhook_attempts_delivery_id"), ["delivery_id"], unique=False
        )
        batch_op.create_index(
            "ix_webhook_attempts_subscription", ["subscription_id", "id"], unique=False
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
    with op.batch_alter_table("webhook_attempts", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_attempts_subscription")
        batch_op.drop_index(batch_op.f("ix_webhook_attempts_delivery_id"))

    op.drop_table("webhook_attempts")
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
    with op.batch_alter_table("linen_group_members", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_group_members_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_linen_group_members_property_id"))

    op.drop_table("linen_group_members")
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_deliveries_subscription")
        batch_op.drop_index("ix_webhook_deliveries_due")

    op.drop_table("webhook_deliveries")
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
    with op.batch_alter_table("linen_invoices", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_invoices_tenant_id"))

    op.drop_table("linen_invoices")
    op.drop_table("whitelists")
    with op.batch_alter_table("webhook_subscriptions", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_subscriptions_tenant")

    op.drop_table("webhook_subscriptions")
    op.drop_table("virtual_numbers")
    if _dialect() == "sqlite":
        op.execute("DROP TABLE IF EXISTS transcripts_fts")
    with op.batch_alter_table("transcripts", schema=None) as batch_op:
        batch_op.drop_index("ix_transcripts_tenant_started")
        if _dialect() == "postgresql":
            batch_op.drop_index("ix_transcripts_search_trgm")

    op.drop_table("transcripts")
    op.drop_table("routing_revisions")
    with op.batch_alter_table("outbound_routes", schema=None) as batch_op:
        batch_op.drop_index("ix_outbound_routes_tenant_position")

    op.drop_table("outbound_routes")
    with op.batch_alter_table("linen_property_groups", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_property_groups_tenant_id"))

    op.drop_table("linen_property_groups")
    with op.batch_alter_table("linen_laundries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_laundries_tenant_id"))

    op.drop_table("linen_laundries")
    with op.batch_alter_table("linen_item_types", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_linen_item_types_tenant_id"))

    op.drop_table("linen_item_types")
    with op.batch_alter_table("inbound_routes", schema=None) as batch_op:
        batch_op.drop_index("ix_inbound_routes_tenant_position")

    op.drop_table("inbound_routes")
    op.drop_table("inbound_calls")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index("ix_events_tenant_created")
        batch_op.drop_index("ix_events_created_at")

    op.drop_table("events")
    with op.batch_alter_table("calls", schema=None) as batch_op:
        batch_op.drop_index("ix_calls_tenant_id_id")
        batch_op.drop_index("ix_calls_status_lease_until")
        batch_op.drop_index("ix_calls_status_due_at")
        batch_op.drop_index("ix_calls_lease_owner")
        batch_op.drop_index("ix_calls_attempt_open_deadline_at")

    op.drop_table("calls")
