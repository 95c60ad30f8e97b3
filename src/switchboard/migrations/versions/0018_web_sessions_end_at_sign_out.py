"""web sessions end at sign-out: the session ids of signed-out console and linen web app
sessions, kept until the sessions' own expiry (decision 0603)

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28 11:51:21.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from switchboard.kit.changes import notify_trigger_sql
from switchboard.kit.models import UtcDateTime

revision: str = "0018"
down_revision: str | Sequence[str] | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Cookies sealed before this revision carry no session id: they are no session, so everyone
    # signed in to a web app signs in once more.
    op.create_table(
        "web_sessions_ended",
        sa.Column("sid", sa.String(length=64), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("sid", name=op.f("pk_web_sessions_ended")),
    )
    if op.get_bind().dialect.name == "postgresql":  # as every table since revision 0014
        for statement in notify_trigger_sql("web_sessions_ended"):
            op.execute(statement)


def downgrade() -> None:
    op.drop_table("web_sessions_ended")
