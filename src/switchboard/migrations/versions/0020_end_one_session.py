"""end one session: the identity provider's browser sessions get a public id (``sid``), the
browser's User-Agent and address; codes and refresh tokens name the session they came from
(decision 0605)

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-28 17:35:00.000000
"""

import secrets
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | Sequence[str] | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("idp_sessions") as batch:
        batch.add_column(sa.Column("sid", sa.String(length=32), nullable=True))
        batch.add_column(
            sa.Column("user_agent", sa.String(length=256), nullable=False, server_default="")
        )
        batch.add_column(
            sa.Column("address", sa.String(length=64), nullable=False, server_default="")
        )
    # Sessions signed in before this revision get a sid of their own, so that they are listed
    # and can be ended like the others; their browser and address are unknown (empty).
    bind = op.get_bind()
    ids = bind.execute(sa.text("SELECT id FROM idp_sessions")).scalars().all()
    for row_id in ids:
        bind.execute(
            sa.text("UPDATE idp_sessions SET sid = :sid WHERE id = :id"),
            {"sid": secrets.token_urlsafe(16), "id": row_id},
        )
    with op.batch_alter_table("idp_sessions") as batch:
        batch.alter_column("sid", existing_type=sa.String(length=32), nullable=False)
        batch.create_unique_constraint(op.f("uq_idp_sessions_sid"), ["sid"])
    with op.batch_alter_table("oidc_auth_codes") as batch:
        batch.add_column(sa.Column("sid", sa.String(length=32), nullable=True))
    with op.batch_alter_table("refresh_tokens") as batch:
        batch.add_column(sa.Column("sid", sa.String(length=32), nullable=True))


def downgrade() -> None:
    # The web apps' cookies then carry a provider sid the earlier version does not read: they
    # are no session, and everyone signs in once more.
    with op.batch_alter_table("refresh_tokens") as batch:
        batch.drop_column("sid")
    with op.batch_alter_table("oidc_auth_codes") as batch:
        batch.drop_column("sid")
    with op.batch_alter_table("idp_sessions") as batch:
        batch.drop_constraint(op.f("uq_idp_sessions_sid"), type_="unique")
        batch.drop_column("address")
        batch.drop_column("user_agent")
        batch.drop_column("sid")
