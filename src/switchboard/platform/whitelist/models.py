"""The whitelist of one tenant: a number list and a number-to-comment map (spec 2.11)."""

from __future__ import annotations

from sqlalchemy import JSON, ForeignKey
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import Base


class Whitelist(Base):
    """One row per tenant.

    Plain ``JSON`` rather than ``JSONB``: PostgreSQL keeps the text as written, so the
    comments map keeps its keys in the order operators typed them.
    """

    __tablename__ = "whitelists"

    tenant_id: Mapped[int] = mapped_column(
        ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    numbers: Mapped[list[str]] = mapped_column(JSON, default=list)
    comments: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
