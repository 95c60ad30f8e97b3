"""Revision 0002, the platform's tables: calls, events, transcripts and their search objects,
routes, numbers, whitelists and webhooks.

Transcript search needs backend-specific objects the models cannot express portably: the
pg_trgm extension and a GIN trigram index on PostgreSQL, an FTS5 trigram table kept in sync by
triggers on SQLite.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from switchboard.kit.models import JsonType, UtcDateTime

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


def downgrade() -> None:
    with op.batch_alter_table("webhook_attempts", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_attempts_subscription")
        batch_op.drop_index(batch_op.f("ix_webhook_attempts_delivery_id"))
    op.drop_table("webhook_attempts")
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_deliveries_subscription")
        batch_op.drop_index("ix_webhook_deliveries_due")
    op.drop_table("webhook_deliveries")
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
