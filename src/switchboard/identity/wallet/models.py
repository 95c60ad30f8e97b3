from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import Base, JsonType, UtcDateTime


class TrustedIssuer(Base):
    """A PID issuer whose signature the tenant accepts (its public JWK), and the claim of its
    credentials that names a local user (the username)."""

    __tablename__ = "wallet_issuers"
    __table_args__ = (UniqueConstraint("tenant_id", "name"), UniqueConstraint("tenant_id", "kid"))

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    kid: Mapped[str] = mapped_column(String(255))
    jwk: Mapped[dict[str, Any]] = mapped_column(JsonType)
    username_claim: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)


class PresentationRequest(Base):
    """One wallet sign-in: the OpenID4VP request (``state``, ``nonce``), the browser waiting for
    it, the authorization request to answer, and once a wallet answered, the user it names."""

    __tablename__ = "wallet_requests"

    id: Mapped[int] = mapped_column(primary_key=True)
    state: Mapped[str] = mapped_column(String(64), unique=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    browser_hash: Mapped[str] = mapped_column(String(64))
    nonce: Mapped[str] = mapped_column(String(64))
    authorize_query: Mapped[str] = mapped_column(String(16384))
    expires_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    # sha256 of the vp_token the wallet posted: a request is answered once, never again.
    response_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), nullable=True
    )
    failure: Mapped[str | None] = mapped_column(String(255), nullable=True)
    used_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
