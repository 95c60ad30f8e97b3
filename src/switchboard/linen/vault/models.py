from __future__ import annotations

import datetime as dt

from sqlalchemy import CheckConstraint, Date, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import IDS_NEVER_REUSED, Base, UtcDateTime


class VaultEntry(Base):
    """A secret of a property or of a group; the secret is sealed with the runtime's box."""

    __tablename__ = "linen_vault_entries"
    __table_args__ = (
        CheckConstraint("(property_id IS NULL) <> (group_id IS NULL)", name="one_owner"),
        IDS_NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    property_id: Mapped[int | None] = mapped_column(
        ForeignKey("linen_properties.id", ondelete="RESTRICT"), nullable=True, index=True
    )
    group_id: Mapped[int | None] = mapped_column(
        ForeignKey("linen_property_groups.id", ondelete="RESTRICT"), nullable=True, index=True
    )
    kind: Mapped[str] = mapped_column(String(16))
    label: Mapped[str] = mapped_column(String(200))
    secret_sealed: Mapped[str] = mapped_column(String(8192))
    valid_from: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    valid_to: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    notes: Mapped[str] = mapped_column(String(2000), default="")
    rotated_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    updated_by: Mapped[str] = mapped_column(String(128), default="")


class VaultReveal(Base):
    """The audit log: one row per reveal, with who and when. It outlives its entry:
    ``entry_id`` is no foreign key (entry ids are never given twice) and ``entry_label`` is
    the entry's label at the reveal (decision 0514)."""

    __tablename__ = "linen_vault_reveals"

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    entry_id: Mapped[int] = mapped_column(index=True)
    entry_label: Mapped[str] = mapped_column(String(200), default="")
    subject: Mapped[str] = mapped_column(String(128))
    username: Mapped[str] = mapped_column(String(128))
    role: Mapped[str] = mapped_column(String(16))
    revealed_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
