"""room peers of every serve process

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 15:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from switchboard.kit.models import UtcDateTime

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "room_peers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("room_id", sa.Integer(), nullable=False),
        sa.Column("peer_id", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("verified", sa.Boolean(), nullable=False),
        sa.Column("pref", sa.String(length=16), nullable=False),
        sa.Column("node", sa.String(length=16), nullable=False),
        sa.Column("joined_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["room_id"], ["rooms.id"], name=op.f("fk_room_peers_room_id_rooms"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_room_peers_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_room_peers")),
        sa.UniqueConstraint("room_id", "peer_id", name=op.f("uq_room_peers_room_id_peer_id")),
    )
    op.create_index(op.f("ix_room_peers_room_id"), "room_peers", ["room_id"], unique=False)
    op.create_index(op.f("ix_room_peers_node"), "room_peers", ["node"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_room_peers_node"), table_name="room_peers")
    op.drop_index(op.f("ix_room_peers_room_id"), table_name="room_peers")
    op.drop_table("room_peers")
