from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.kit.crypto import sha256_hex
from switchboard.kit.models import Base, JsonType, UtcDateTime

ROLES = ("admin", "power-user", "user")
USER_AGENT_CHARS = 256


class User(Base):
    __tablename__ = "users"
    __table_args__ = (UniqueConstraint("tenant_id", "username"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    username: Mapped[str] = mapped_column(String(128))
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(16))
    disabled: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    failed_logins: Mapped[int] = mapped_column(default=0)
    locked_until: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    # The last wrong password counted against the user: a tally quiet for a day is forgotten,
    # as an unknown username's is (``UnknownUserFailures``). None until the first since 0028.
    failed_login_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    # Where the media bridge rings the user for an office-tab inbound call (``sip:...``).
    sip_uri: Mapped[str | None] = mapped_column(String(255), nullable=True)
    # Given by the operator (or by a federated provider); sent in ID tokens for scope ``email``.
    email: Mapped[str | None] = mapped_column(String(320), nullable=True)
    email_verified: Mapped[bool] = mapped_column(default=False)
    # Changed to a fresh random value by "sign out everywhere" (decision 0604): the web apps'
    # session cookies carry a stamp of it (``credential_stamp``). Empty until then.
    security_stamp: Mapped[str] = mapped_column(String(64), default="", server_default="")


def credential_stamp(user: User) -> str:
    """A short digest of the user's password hash and security stamp, kept in the web apps'
    sealed session cookies and the identity provider's device cookies (decision 0031): a new
    password, or a new security stamp ("sign out everywhere", decision 0604), ends the web apps'
    sessions signed in before it (as Django's session auth hash and ASP.NET Identity's security
    stamp do) and distrusts the devices. The cookies are sealed: the browser cannot read it.

    With an empty security stamp (every user until they are first signed out everywhere) it is
    the digest of the password hash alone, as before the stamp existed: the sessions of an
    upgraded server go on. A password hash (a PHC string) holds no line break, so no other
    pair gives the same text."""
    if not user.security_stamp:
        return sha256_hex(user.password_hash)[:16]
    return sha256_hex(f"{user.password_hash}\n{user.security_stamp}")[:16]


class OidcClient(Base):
    __tablename__ = "oidc_clients"
    __table_args__ = (UniqueConstraint("tenant_id", "client_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    client_id: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    # Confidential clients have a secret (SHA-256 of 256 random bits); public ones rely on PKCE.
    secret_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)


class SigningKey(Base):
    """An RS256 key pair. ``active`` signs; older keys stay published until retired."""

    __tablename__ = "signing_keys"

    kid: Mapped[str] = mapped_column(String(64), primary_key=True)
    public_jwk: Mapped[dict[str, Any]] = mapped_column(JsonType)
    private_jwk_sealed: Mapped[str] = mapped_column(String(8192))
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    active: Mapped[bool] = mapped_column(default=False)
    retired_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)


class RefreshToken(Base):
    __tablename__ = "refresh_tokens"
    __table_args__ = (
        Index("ix_refresh_tokens_family", "family_id"),
        Index("ix_refresh_tokens_user_id", "user_id"),
        Index("ix_refresh_tokens_sid", "sid"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    family_id: Mapped[str] = mapped_column(String(32))
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    client_id: Mapped[str] = mapped_column(String(128))
    scope: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    expires_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    used_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    # The browser session (``BrowserSession.sid``) the family was signed in with, when it came
    # from the authorization-code flow: ending that session revokes the family (decision 0605).
    sid: Mapped[str | None] = mapped_column(String(32), nullable=True)
    # When the user signed in for the family (the ID tokens of its refreshes say so, OpenID
    # Connect Core 12.2); None for tokens issued before it was kept (their own creation time).
    auth_time: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)


class ApiKey(Base):
    """An ``ak_`` key: only its SHA-256 hash is kept."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(128), default="")
    prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    last_used_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)


class OidcClientUri(Base):
    """A URI registered for a client: where codes may be sent (``redirect``) or where a
    signed-out browser may be sent back (``post_logout``). Matched exactly."""

    __tablename__ = "oidc_client_uris"
    __table_args__ = (UniqueConstraint("client_pk", "kind", "uri"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    client_pk: Mapped[int] = mapped_column(ForeignKey("oidc_clients.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16))
    uri: Mapped[str] = mapped_column(String(2048))


class BrowserSession(Base):
    """A signed-in browser on the identity provider; the cookie holds a token, we its hash.

    ``sid`` names the session in public (the ID token's ``sid`` claim, the console's Sessions
    page, ``switchboard user sessions``); the token is never shown (decision 0605)."""

    __tablename__ = "idp_sessions"
    __table_args__ = (Index("ix_idp_sessions_user_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    sid: Mapped[str] = mapped_column(String(32), unique=True)
    # The browser's User-Agent (at most USER_AGENT_CHARS) and client address at sign-in.
    user_agent: Mapped[str] = mapped_column(String(USER_AGENT_CHARS), default="", server_default="")
    address: Mapped[str] = mapped_column(String(64), default="", server_default="")
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    auth_time: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    expires_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    ended_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)


class AuthorizationCode(Base):
    """A single-use authorization code, bound to its client, redirect URI and PKCE challenge.

    ``family_id`` names the refresh-token family the code's exchange started, so a replayed code
    can revoke what it issued (RFC 6749 section 10.5)."""

    __tablename__ = "oidc_auth_codes"

    id: Mapped[int] = mapped_column(primary_key=True)
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    client_id: Mapped[str] = mapped_column(String(128))
    redirect_uri: Mapped[str] = mapped_column(String(2048))
    code_challenge: Mapped[str] = mapped_column(String(128))
    scope: Mapped[str] = mapped_column(String(255))
    nonce: Mapped[str | None] = mapped_column(String(512), nullable=True)
    auth_time: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    expires_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
    used_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    family_id: Mapped[str] = mapped_column(String(32))
    # The browser session the code was issued in (``BrowserSession.sid``).
    sid: Mapped[str | None] = mapped_column(String(32), nullable=True)
    # The issuer (``auth.bearer.issuer_for``, one a host of the tenant) whose authorization
    # response carried the code: it is redeemed at that issuer only (decision 0035). None for
    # codes issued before revision 0029, which no issuer redeems.
    issuer: Mapped[str | None] = mapped_column(String(2048), nullable=True)


class DeviceFailures(Base):
    """The wrong passwords typed in one browser that holds a device cookie of the user (decision
    0031): its own tally and lockout, apart from the user's. The row is named by the SHA-256 of
    the cookie's random nonce; it goes with a success in that browser, an unlock or a new
    password, or once the cookie has expired (``expires_at``)."""

    __tablename__ = "idp_device_failures"
    __table_args__ = (Index("ix_idp_device_failures_user_id", "user_id"),)

    nonce_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    failures: Mapped[int] = mapped_column(default=0)
    locked_until: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    expires_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)


class UnknownUserFailures(Base):
    """The wrong passwords typed for a username no user of the tenant has: counted and locked
    as a user's are (decision 0006), so the lockout does not tell which usernames exist. The
    row is named by a keyed hash of the tenant and the name (``identity.lockout.UnknownNames``),
    never by the name; it is forgotten a day after its last failure (``failed_at``)."""

    __tablename__ = "idp_unknown_user_failures"
    __table_args__ = (Index("ix_idp_unknown_user_failures_failed_at", "failed_at"),)

    name_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    failures: Mapped[int] = mapped_column(default=0)
    locked_until: Mapped[dt.datetime | None] = mapped_column(UtcDateTime, nullable=True)
    failed_at: Mapped[dt.datetime] = mapped_column(UtcDateTime)
