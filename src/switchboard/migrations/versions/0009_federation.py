"""federation: external OpenID Connect providers, their account links and sign-ins; user email

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 10:45:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from switchboard.kit.models import JsonType, UtcDateTime

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("email", sa.String(length=320), nullable=True))
        batch.add_column(
            sa.Column("email_verified", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    op.create_table(
        "federation_providers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("display_name", sa.String(length=128), nullable=False),
        sa.Column("issuer", sa.String(length=2048), nullable=False),
        sa.Column("client_id", sa.String(length=255), nullable=False),
        sa.Column("secret_source", sa.String(length=1024), nullable=True),
        sa.Column("scopes", sa.String(length=512), nullable=False),
        sa.Column("username_claim", sa.String(length=128), nullable=False),
        sa.Column("role_claim", sa.String(length=128), nullable=True),
        sa.Column("default_role", sa.String(length=16), nullable=False),
        sa.Column("allowed_domains", JsonType, nullable=False),
        sa.Column("first_login", sa.String(length=32), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_federation_providers_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_federation_providers")),
        sa.UniqueConstraint(
            "tenant_id", "name", name=op.f("uq_federation_providers_tenant_id_name")
        ),
    )
    op.create_table(
        "federation_identities",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("provider_id", sa.Integer(), nullable=False),
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_federation_identities_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["provider_id"],
            ["federation_providers.id"],
            name=op.f("fk_federation_identities_provider_id_federation_providers"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_federation_identities_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_federation_identities")),
        sa.UniqueConstraint(
            "provider_id", "subject", name=op.f("uq_federation_identities_provider_id_subject")
        ),
    )
    op.create_index(op.f("ix_federation_identities_user_id"), "federation_identities", ["user_id"])
    op.create_table(
        "federation_logins",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("state_hash", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("provider_id", sa.Integer(), nullable=False),
        sa.Column("browser_hash", sa.String(length=64), nullable=False),
        sa.Column("nonce", sa.String(length=64), nullable=False),
        sa.Column("verifier_sealed", sa.String(length=1024), nullable=False),
        sa.Column("authorize_query", sa.String(length=16384), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("used_at", UtcDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_federation_logins_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["provider_id"],
            ["federation_providers.id"],
            name=op.f("fk_federation_logins_provider_id_federation_providers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_federation_logins")),
        sa.UniqueConstraint("state_hash", name=op.f("uq_federation_logins_state_hash")),
    )


def downgrade() -> None:
    op.drop_table("federation_logins")
    op.drop_index(op.f("ix_federation_identities_user_id"), table_name="federation_identities")
    op.drop_table("federation_identities")
    op.drop_table("federation_providers")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("email_verified")
        batch.drop_column("email")
