"""session lookup indexes: a user's provider sessions, a user's refresh tokens and a session's
refresh tokens are found by index, not by scanning (signing out everywhere, a password change,
listing and ending a user's sessions)

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28 18:40:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0021"
down_revision: str | Sequence[str] | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_idp_sessions_user_id", "idp_sessions", ["user_id"])
    op.create_index("ix_refresh_tokens_user_id", "refresh_tokens", ["user_id"])
    op.create_index("ix_refresh_tokens_sid", "refresh_tokens", ["sid"])


def downgrade() -> None:
    op.drop_index("ix_refresh_tokens_sid", table_name="refresh_tokens")
    op.drop_index("ix_refresh_tokens_user_id", table_name="refresh_tokens")
    op.drop_index("ix_idp_sessions_user_id", table_name="idp_sessions")
