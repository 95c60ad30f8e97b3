from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import Base, JsonType, UtcDateTime


class IssuerKey(Base):
    """The tenant's credential signing key (ES256), its private half sealed. Apart from the
    identity provider's token keys, which every tenant shares: a credential names its tenant by
    the key that signed it."""

    __tablename__ = "vci_issuer_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    kid: Mapped[str] = mapped_column(String(64), unique=True)
    public_jwk: Mapped[dict[str, Any]] = mapped_column(JsonType)
    private_jwk_sealed: Mapped[str] = mapped_column(String(4096))
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)


class CredentialOffer(Base):
    """One offer of a staff credential to a user's wallet: the pre-authorized code (and its
    transaction code), then the access token it was redeemed for, then the issuance."""

    __tablename__ = "vci_offers"

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    tx_code_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    tx_code_failures: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    expires_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    redeemed_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    token_hash: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    token_expires_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    issued_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)


class CredentialNonce(Base):
    """A ``c_nonce`` from the nonce endpoint: one key proof may use it, once, until it expires."""

    __tablename__ = "vci_nonces"

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    nonce: Mapped[str] = mapped_column(String(64), unique=True)
    expires_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)


class StatusList(Base):
    """One status list of the tenant (Token Status List, one bit per credential): its random
    identifier in the URI, its size in entries, and how many entries were handed out."""

    __tablename__ = "vci_status_lists"

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    list_id: Mapped[str] = mapped_column(String(64), unique=True)
    size: Mapped[int]
    used: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)


class IssuedCredential(Base):
    """A staff credential issued: whose it is, its entry in a status list, and its revocation.
    The row outlives its user (``user_id`` emptied), so the entry stays revoked."""

    __tablename__ = "vci_credentials"
    __table_args__ = (UniqueConstraint("status_list_id", "idx"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    username: Mapped[str] = mapped_column(String(128))
    status_list_id: Mapped[int] = mapped_column(
        ForeignKey("vci_status_lists.id", ondelete="CASCADE")
    )
    idx: Mapped[int]
    issued_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    expires_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    revoked_reason: Mapped[str | None] = mapped_column(String(255), nullable=True)
