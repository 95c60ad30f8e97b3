"""The operator ACL table. Operator-wide: it has no tenant column, so no per-tenant rule can
ever be consulted by the relay."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import Base, UtcDateTime


class RelayAclRule(Base):
    __tablename__ = "relay_acl_rules"
    __table_args__ = (UniqueConstraint("subject", "value", "scope"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    subject: Mapped[str] = mapped_column(String(8))
    value: Mapped[str] = mapped_column(String(64))
    scope: Mapped[str] = mapped_column(String(16))
    note: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())
