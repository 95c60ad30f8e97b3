"""authorization codes: the issuer whose authorization response carried the code, the only one
that redeems it (RFC 9207; decision 0035)

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-30 12:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | Sequence[str] | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Codes issued before it (60 s each) have none, and no issuer redeems them.
    with op.batch_alter_table("oidc_auth_codes") as batch:
        batch.add_column(sa.Column("issuer", sa.String(length=2048), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("oidc_auth_codes") as batch:
        batch.drop_column("issuer")
