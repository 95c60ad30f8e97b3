"""What PostgreSQL counts of the current transaction, for tests that check how a statement read."""

from __future__ import annotations

from sqlalchemy import Integer, TextualSelect, column, text

_READ = """
SELECT idx_tup_fetch + seq_tup_read FROM pg_stat_xact_user_tables WHERE relname = :table
"""


def rows_read(table: str) -> TextualSelect:
    """The rows of ``table`` the current transaction has read so far, by index or by scan
    (``pg_stat_xact_user_tables``: counted as they are read, before any commit)."""
    return text(_READ).bindparams(table=table).columns(column("read", Integer))
