from __future__ import annotations

import datetime as dt

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.models import Base, JsonType, UtcDateTime

FIRST_LOGIN = ("create", "link-by-verified-email", "refuse")


class ExternalProvider(Base):
    """An external OpenID Connect provider the tenant's users may sign in with.

    The client secret is ``secret_sealed`` (the value, sealed), or ``secret_source``, the
    operator's reference to where it is read at each use (``env:NAME`` or ``file:/path``,
    decision 0024); at most one of them is set, neither for a public client."""

    __tablename__ = "federation_providers"
    __table_args__ = (UniqueConstraint("tenant_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    display_name: Mapped[str] = mapped_column(String(128))
    issuer: Mapped[str] = mapped_column(String(2048))
    client_id: Mapped[str] = mapped_column(String(255))
    secret_source: Mapped[str | None] = mapped_column(String(1024), nullable=True)
    secret_sealed: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    scopes: Mapped[str] = mapped_column(String(512))
    username_claim: Mapped[str] = mapped_column(String(128))
    role_claim: Mapped[str | None] = mapped_column(String(128), nullable=True)
    default_role: Mapped[str] = mapped_column(String(16))
    allowed_domains: Mapped[list[str]] = mapped_column(JsonType)
    first_login: Mapped[str] = mapped_column(String(32))
    enabled: Mapped[bool] = mapped_column(default=True)
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)


class ExternalIdentity(Base):
    """A local user linked to a provider's subject (``sub``): later sign-ins find it here."""

    __tablename__ = "federation_identities"
    __table_args__ = (UniqueConstraint("provider_id", "subject"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    provider_id: Mapped[int] = mapped_column(
        ForeignKey("federation_providers.id", ondelete="CASCADE")
    )
    subject: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)


class ExternalLogin(Base):
    """One sign-in sent to a provider: its ``state`` (hashed), ``nonce`` and PKCE verifier
    (sealed), the browser it is bound to, and the authorization request to answer afterwards."""

    __tablename__ = "federation_logins"

    id: Mapped[int] = mapped_column(primary_key=True)
    state_hash: Mapped[str] = mapped_column(String(64), unique=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    provider_id: Mapped[int] = mapped_column(
        ForeignKey("federation_providers.id", ondelete="CASCADE")
    )
    browser_hash: Mapped[str] = mapped_column(String(64))
    nonce: Mapped[str] = mapped_column(String(64))
    verifier_sealed: Mapped[str] = mapped_column(String(1024))
    authorize_query: Mapped[str] = mapped_column(String(16384))
    expires_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    used_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
