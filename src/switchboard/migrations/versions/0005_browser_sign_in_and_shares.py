"""browser sign-in on the identity provider, and transcript share links

Authorization codes, IdP browser sessions, the redirect and post-logout URIs of each client and
its optional secret; the share links of transcripts.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 06:35:51.238188
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from switchboard.kit.models import UtcDateTime

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "idp_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("auth_time", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("ended_at", UtcDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_idp_sessions_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_idp_sessions_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_idp_sessions")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_idp_sessions_token_hash")),
    )
    op.create_table(
        "oidc_auth_codes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("client_id", sa.String(length=128), nullable=False),
        sa.Column("redirect_uri", sa.String(length=2048), nullable=False),
        sa.Column("code_challenge", sa.String(length=128), nullable=False),
        sa.Column("scope", sa.String(length=255), nullable=False),
        sa.Column("nonce", sa.String(length=512), nullable=True),
        sa.Column("auth_time", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("used_at", UtcDateTime(), nullable=True),
        sa.Column("family_id", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_oidc_auth_codes_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_oidc_auth_codes_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oidc_auth_codes")),
        sa.UniqueConstraint("code_hash", name=op.f("uq_oidc_auth_codes_code_hash")),
    )
    op.create_table(
        "oidc_client_uris",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("client_pk", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("uri", sa.String(length=2048), nullable=False),
        sa.ForeignKeyConstraint(
            ["client_pk"],
            ["oidc_clients.id"],
            name=op.f("fk_oidc_client_uris_client_pk_oidc_clients"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oidc_client_uris")),
        sa.UniqueConstraint(
            "client_pk", "kind", "uri", name=op.f("uq_oidc_client_uris_client_pk_kind_uri")
        ),
    )
    op.create_table(
        "transcript_shares",
        sa.Column("id", sa.String(length=24), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("transcript_id", sa.Integer(), nullable=False),
        sa.Column("call_id", sa.String(length=64), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("token_tail", sa.String(length=8), nullable=False),
        sa.Column("ttl_hours", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=True),
        sa.Column("views", sa.Integer(), nullable=False),
        sa.Column("last_viewed_at", UtcDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_transcript_shares_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["transcript_id"],
            ["transcripts.id"],
            name=op.f("fk_transcript_shares_transcript_id_transcripts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_transcript_shares")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_transcript_shares_token_hash")),
    )
    with op.batch_alter_table("transcript_shares", schema=None) as batch_op:
        batch_op.create_index(
            "ix_transcript_shares_tenant_call", ["tenant_id", "call_id"], unique=False
        )

    with op.batch_alter_table("oidc_clients", schema=None) as batch_op:
        batch_op.add_column(sa.Column("secret_hash", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("oidc_clients", schema=None) as batch_op:
        batch_op.drop_column("secret_hash")

    with op.batch_alter_table("transcript_shares", schema=None) as batch_op:
        batch_op.drop_index("ix_transcript_shares_tenant_call")

    op.drop_table("transcript_shares")
    op.drop_table("oidc_client_uris")
    op.drop_table("oidc_auth_codes")
    op.drop_table("idp_sessions")
