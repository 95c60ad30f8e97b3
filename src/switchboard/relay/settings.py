"""The relay's own settings, read once from ``SWITCHBOARD_RELAY_*`` variables."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Annotated, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from switchboard.relay.acl import normalize


class RelaySettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SWITCHBOARD_RELAY_", extra="ignore")

    # Where the ACL lives: the platform's database (SWITCHBOARD_DATABASE_URL when empty).
    database_url: str = ""
    secret: str = Field(default="", repr=False)
    realm: str = "switchboard"
    # Public addresses coturn listens and relays on; the guard binds its TLS ports on bind_host.
    listening_ips: tuple[str, ...] = ()
    relay_ips: tuple[str, ...] = ()
    external_ip: str = ""
    bind_host: str = "0.0.0.0"  # noqa: S104 (the relay is a public service)
    turn_port: int = Field(default=3478, ge=1, le=65535)
    tls_ports: tuple[int, ...] = (5349, 443)
    # coturn's PROXY-protocol listener, fed by the guard only (loopback, refused from outside).
    proxy_port: int = Field(default=3479, ge=1, le=65535)
    min_relay_port: int = Field(default=49152, ge=1024, le=65535)
    max_relay_port: int = Field(default=65535, ge=1024, le=65535)
    cert_file: Path = Path("/etc/switchboard/relay/fullchain.pem")
    key_file: Path = Path("/etc/switchboard/relay/privkey.pem")
    handshake_timeout: float = Field(default=10.0, gt=0)
    # Precedence step 3 (spec 8.2.5): per-IP allocation quota and unauthenticated binding rate.
    per_ip_allocations: int = Field(default=20, ge=1)
    # TCP and TLS connections the guard holds at once, every client together (decision 0708):
    # past it, public addresses' new ones are refused, so a flood from many cannot take them all.
    max_connections: int = Field(default=8192, ge=1)
    user_quota: int = Field(default=10, ge=0)
    total_quota: int = Field(default=0, ge=0)
    binding_rate_per_second: int = Field(default=20, ge=1)
    binding_burst: int = Field(default=40, ge=1)
    run_dir: Path = Path("./var/relay")
    nft_table: str = "switchboard_relay"
    firewall: bool = True
    metrics_host: str = "127.0.0.1"
    metrics_port: int = Field(default=9641, ge=0, le=65535)
    reload_interval: float = Field(default=2.0, gt=0)
    stats_interval: float = Field(default=30.0, gt=0)
    turnserver: str = "turnserver"
    # The group turnserver runs with: the packet filter knows coturn's sockets by it (decision
    # 0704). The Debian coturn package creates it.
    coturn_group: str = "turnserver"
    # More peers coturn never relays to, after its built-in ones (decision 0707): the operator's
    # other public hosts. Comma-separated CIDRs (or a JSON list), exact networks.
    denied_peers: Annotated[tuple[str, ...], NoDecode] = ()

    @field_validator("denied_peers", mode="before")
    @classmethod
    def _networks(cls, value: object, info: ValidationInfo) -> object:
        if isinstance(value, str):
            value = json.loads(value) if value.lstrip().startswith("[") else value.split(",")
        if not isinstance(value, tuple | list):
            return value
        networks = tuple(_network(str(part)) for part in value if str(part).strip())
        # Two peers that both use the relay talk through its relayed addresses: denying one
        # would refuse exactly the calls the relay is for.
        external = info.data.get("external_ip", "").split("/")[0]  # coturn's "public/private"
        for address in (*info.data.get("relay_ips", ()), *([external] if external else [])):
            for network in map(ipaddress.ip_network, networks):
                if _holds(network, address):
                    raise ValueError(f"{network} holds the relay's own address {address}")
        return networks

    @model_validator(mode="after")
    def _relay_range_is_coturns(self) -> Self:
        """The relayed-media range is coturn's alone: a port of the relay's own inside it could
        be handed to a peer, and the packet filter leaves that range open (docs/relay.md)."""
        low, high = self.min_relay_port, self.max_relay_port
        if low > high:
            raise ValueError(
                f"SWITCHBOARD_RELAY_MIN_RELAY_PORT ({low}) is above "
                f"SWITCHBOARD_RELAY_MAX_RELAY_PORT ({high})"
            )
        own = [
            ("TURN_PORT", self.turn_port),
            *(("TLS_PORTS", port) for port in self.tls_ports),
            ("PROXY_PORT", self.proxy_port),
            ("METRICS_PORT", self.metrics_port),
        ]
        for name, port in own:
            if low <= port <= high:
                raise ValueError(
                    f"SWITCHBOARD_RELAY_{name} ({port}) lies in the relayed-media range "
                    f"{low}-{high}: keep the relay's own ports out of it"
                )
        return self


def _network(text: str) -> str:
    try:
        return normalize("cidr", text)
    except ValueError as exc:
        raise ValueError(f"invalid network {text.strip()!r}: {exc}") from None


def _holds(network: ipaddress.IPv4Network | ipaddress.IPv6Network, address: str) -> bool:
    try:
        return ipaddress.ip_address(address) in network
    except ValueError:  # not an address: coturn refuses it with a message of its own
        return False
