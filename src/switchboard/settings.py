"""All configuration, read once from ``SWITCHBOARD_*`` environment variables."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

DEV_SECRET = "dev-insecure-secret-change-me"  # noqa: S105 (the refused placeholder)
# Cached properties derived from the fields: a copy with other fields computes them anew.
_DERIVED = ("resolved_database_url", "primary_domain", "public_scheme")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SWITCHBOARD_", extra="ignore")

    env: Literal["dev", "production"] = "dev"
    data_dir: Path = Path("./var")
    database_url: str = ""
    # PostgreSQL connections each process keeps open (decision 0993).
    database_pool_size: int = Field(default=20, ge=1, le=500)
    public_base_url: str = "http://127.0.0.1:8000"
    secret_key: str = Field(default=DEV_SECRET, repr=False)
    log_level: str = "INFO"
    log_format: Literal["text", "json"] = "text"
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)

    access_token_ttl: int = Field(default=3600, ge=60, le=86400)
    refresh_token_ttl: int = Field(default=30 * 86400, ge=3600)
    argon2_time_cost: int = Field(default=3, ge=1)
    argon2_memory_kib: int = Field(default=65536, ge=64)
    argon2_parallelism: int = Field(default=4, ge=1)
    login_max_failures: int = Field(default=5, ge=1)
    login_lockout_seconds: int = Field(default=300, ge=1)
    # How long a browser where a user signed in is known again by its device cookie (decision
    # 0031); at most 400 days, the longest a browser keeps a cookie.
    login_device_ttl: int = Field(default=90 * 86400, ge=3600, le=400 * 86400)
    idp_session_ttl: int = Field(default=8 * 3600, ge=300, le=30 * 86400)
    external_jwks_ttl: int = Field(default=300, ge=1)
    # CIDRs the documents of external issuers (a tenant's ExternalOidc:JwksUrl, a PID's status
    # list) may be fetched from, beside public addresses (decision 0028).
    issuer_allow_private: Annotated[tuple[str, ...], NoDecode] = ()
    api_key_cache_seconds: float = Field(default=2.0, ge=0, le=60)
    read_cache_entries: int = Field(default=1000, ge=0, le=100_000)

    bridge_url: str = ""
    bridge_secret: str = Field(default="", repr=False)
    sim_speed: float = Field(default=1.0, gt=0)
    call_lease_seconds: float = Field(default=30.0, gt=0)
    call_watchdog_grace_seconds: float = Field(default=120.0, ge=0)

    webhook_retry_delays: Annotated[tuple[float, ...], NoDecode] = (5.0, 30.0, 120.0)
    webhook_allow_private: Annotated[tuple[str, ...], NoDecode] = ()
    webhook_timeout: float = Field(default=10.0, gt=0)
    webhook_log_retention_days: int = Field(default=30, ge=1)

    # Federation (docs/identity.md): CIDRs the providers' addresses may be in besides public
    # ones (decision 0205's rules, as for webhooks), and the one folder whose files the
    # operator may name as a provider's client secret (decision 0024).
    federation_allow_private: Annotated[tuple[str, ...], NoDecode] = ()
    federation_secrets_dir: Path | None = None

    # The outcome email (docs/calls.md): none is queued while smtp_host is empty.
    smtp_host: str = ""
    smtp_port: int = Field(default=587, ge=1, le=65535)
    smtp_security: Literal["starttls", "tls", "none"] = "starttls"
    smtp_user: str = ""
    smtp_password_file: Path | None = None
    smtp_ca_file: Path | None = None
    smtp_sender: str = "switchboard@localhost"
    smtp_timeout: float = Field(default=30.0, gt=0)
    email_retry_delays: Annotated[tuple[float, ...], NoDecode] = (60.0, 300.0, 1800.0)
    trusted_proxies: Annotated[tuple[str, ...], NoDecode] = ()

    # Meeting rooms (docs/rooms.md): limits of the signaling WebSocket, per room and per socket.
    room_max_peers: int = Field(default=50, ge=2, le=1000)
    room_max_message_bytes: int = Field(default=64 * 1024, ge=1024, le=1024 * 1024)
    room_max_messages_per_second: int = Field(default=50, ge=1, le=10000)
    # A socket must send its ``join`` this soon; one client address holds at most this many
    # sockets in a process (docs/decisions/0850-signaling-sockets-per-address.md).
    room_join_timeout: float = Field(default=10.0, gt=0, le=300)
    room_max_sockets_per_ip: int = Field(default=100, ge=1, le=100000)
    # Frames that write an event or reach the bridge (``preference`` that changes, ``admit``,
    # ``sfu-*`` in SFU mode): this many per socket and second, after a burst of four per peer
    # of a full room; peers waiting in a lobby, apart from ``room_max_peers``; AI calls to a
    # virtual number at once, per number and per client address. With the fan-out the last
    # three hold over every process (docs/decisions/0851 to 0854).
    room_max_requests_per_second: float = Field(default=5.0, gt=0, le=10000)
    room_max_waiting: int = Field(default=20, ge=1, le=1000)
    room_max_calls_per_number: int = Field(default=10, ge=1, le=10000)
    room_max_calls_per_ip: int = Field(default=2, ge=1, le=10000)
    # How often the room page reports its connections to the bandwidth detector (docs/rooms.md).
    room_stats_seconds: float = Field(default=5.0, ge=1, le=60)
    # The relay's TURN URLs and shared secret: room peers get time-limited credentials.
    room_turn_urls: Annotated[tuple[str, ...], NoDecode] = ()
    room_turn_secret: str = Field(default="", repr=False)
    # Redis for the rooms of several ``serve`` processes on one PostgreSQL (decision 0840):
    # frames between processes go through its pub/sub; empty keeps rooms in one process.
    room_fanout_url: str = Field(default="", repr=False)

    run_workers: bool = True

    @field_validator("webhook_retry_delays", "email_retry_delays", mode="before")
    @classmethod
    def _delays(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(float(part) for part in value.split(",") if part.strip())
        return value

    @field_validator("room_turn_urls", mode="before")
    @classmethod
    def _urls(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator(
        "webhook_allow_private",
        "federation_allow_private",
        "issuer_allow_private",
        "trusted_proxies",
        mode="before",
    )
    @classmethod
    def _cidrs(cls, value: object) -> object:
        if isinstance(value, str):
            value = tuple(part.strip() for part in value.split(",") if part.strip())
        if isinstance(value, tuple | list):
            for cidr in value:
                ipaddress.ip_network(cidr, strict=False)
        return value

    @field_validator("federation_secrets_dir", mode="before")
    @classmethod
    def _optional_dir(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("public_base_url")
    @classmethod
    def _base_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("must be an absolute http(s) URL")
        return value.rstrip("/")

    @field_validator("room_fanout_url")
    @classmethod
    def _fanout_url(cls, value: str) -> str:
        if value and urlsplit(value).scheme not in ("redis", "rediss", "unix"):
            raise ValueError("must be a redis://, rediss:// or unix:// URL")
        return value

    @model_validator(mode="after")
    def _fanout_needs_postgres(self) -> Settings:
        if self.room_fanout_url and self.resolved_database_url.startswith("sqlite"):
            raise ValueError(
                "SWITCHBOARD_ROOM_FANOUT_URL needs PostgreSQL: SQLite runs one serve process"
            )
        return self

    @model_validator(mode="after")
    def _production_secrets(self) -> Settings:
        if self.env == "production" and self.secret_key == DEV_SECRET:
            raise ValueError("SWITCHBOARD_SECRET_KEY must be set outside dev mode")
        if self.env == "production" and len(self.secret_key) < 32:
            raise ValueError("SWITCHBOARD_SECRET_KEY must be at least 32 characters")
        return self

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy whose derived values (the cached properties below) follow the update."""
        copy = super().model_copy(update=update, deep=deep)
        for name in _DERIVED:
            copy.__dict__.pop(name, None)
        return copy

    @cached_property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'switchboard.db').resolve()}"

    @cached_property
    def primary_domain(self) -> str:
        """Host (with port when given) of the public base URL: it names the primary tenant."""
        return urlsplit(self.public_base_url).netloc.lower()

    @cached_property
    def public_scheme(self) -> str:
        return urlsplit(self.public_base_url).scheme
