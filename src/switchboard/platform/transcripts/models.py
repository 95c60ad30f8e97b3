"""The transcript index. The turns themselves live in the transcript file.

``search_text`` holds the lower-cased fields ``q`` searches (caller, number, displayName,
rule), separated by a newline so a match never spans two fields. It is indexed for substring
search: a ``pg_trgm`` GIN index on PostgreSQL, an FTS5 ``trigram`` table kept in sync by
triggers on SQLite (see docs/decisions/0401-transcript-substring-search.md).
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import DDL, ForeignKey, Index, Integer, String, Text, UniqueConstraint, event
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import Base, UtcDateTime

OUTBOUND_SOURCE = "outbound-ai"
INBOUND_SOURCES = ("vnum", "office-tab", "sip")
CALLER_SOURCES = (OUTBOUND_SOURCE, *INBOUND_SOURCES)


class Transcript(Base):
    __tablename__ = "transcripts"
    __table_args__ = (
        UniqueConstraint("tenant_id", "call_id"),
        Index("ix_transcripts_tenant_started", "tenant_id", "started_at", "id"),
        Index(
            "ix_transcripts_search_trgm",
            "search_text",
            postgresql_using="gin",
            postgresql_ops={"search_text": "gin_trgm_ops"},
        ).ddl_if(dialect="postgresql"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    call_id: Mapped[str] = mapped_column(String(64))
    caller_source: Mapped[str] = mapped_column(String(32))
    requested_by: Mapped[str] = mapped_column(String(255), default="")
    phone: Mapped[str] = mapped_column(String(64), default="")
    display_name: Mapped[str] = mapped_column(String(255), default="")
    email: Mapped[str] = mapped_column(String(320), default="")
    number: Mapped[str] = mapped_column(String(64), default="")
    rule: Mapped[str] = mapped_column(String(255), default="")
    voice: Mapped[str] = mapped_column(String(32), default="")
    language: Mapped[str] = mapped_column(String(35), default="")
    model: Mapped[str] = mapped_column(String(128), default="")
    trunk_id: Mapped[str] = mapped_column(String(128), default="")
    started_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    answered_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    ended_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    saved_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    duration_sec: Mapped[int] = mapped_column(Integer)
    outcome: Mapped[str] = mapped_column(String(64), default="")
    error_detail: Mapped[str] = mapped_column(Text, default="")
    tokens_prompt: Mapped[int] = mapped_column(Integer, default=0)
    tokens_total: Mapped[int] = mapped_column(Integer, default=0)
    input_turns: Mapped[int] = mapped_column(Integer, default=0)
    output_turns: Mapped[int] = mapped_column(Integer, default=0)
    turn_count: Mapped[int] = mapped_column(Integer, default=0)
    size: Mapped[int] = mapped_column(Integer, default=0)
    file: Mapped[str] = mapped_column(String(255))
    search_text: Mapped[str] = mapped_column(Text, default="")


def _ddl(statement: str) -> DDL:
    return DDL(statement)  # type: ignore[no-untyped-call]


# PostgreSQL: the trigram operator class comes from the pg_trgm extension.
event.listen(
    Base.metadata,
    "before_create",
    _ddl("CREATE EXTENSION IF NOT EXISTS pg_trgm").execute_if(dialect="postgresql"),
)

# SQLite: an external-content FTS5 table with the trigram tokenizer, kept in sync by triggers.
SQLITE_FTS_DDL = (
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
for _statement in SQLITE_FTS_DDL:
    event.listen(
        Transcript.__table__, "after_create", _ddl(_statement).execute_if(dialect="sqlite")
    )
event.listen(
    Transcript.__table__,
    "before_drop",
    _ddl("DROP TABLE IF EXISTS transcripts_fts").execute_if(dialect="sqlite"),
)
