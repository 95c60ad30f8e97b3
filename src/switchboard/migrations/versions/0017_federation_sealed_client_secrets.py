"""federation: a provider's client secret may be stored sealed (entered in the console), beside
the operator's env:/file: reference (decision 0024)

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28 10:07:49.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | Sequence[str] | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Stored references stay as they are: those outside the operator's boundary are refused at
    # sign-in and listed by `switchboard federation check`, never read.
    with op.batch_alter_table("federation_providers") as batch:
        batch.add_column(sa.Column("secret_sealed", sa.String(length=2048), nullable=True))


def downgrade() -> None:
    # A sealed secret has no place in the older schema: those providers become public clients
    # (their sign-ins fail until the operator sets a reference again).
    with op.batch_alter_table("federation_providers") as batch:
        batch.drop_column("secret_sealed")
