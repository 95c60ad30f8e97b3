"""coturn's configuration, written by the relay, and the supervised ``turnserver`` process.

coturn itself serves UDP on the TURN port (filtered by the packet filter in front) and a
PROXY-protocol TCP listener that only the guard feeds, so coturn sees every TCP and TLS client's
real address. coturn's own TLS and DTLS are off: the guard terminates TLS.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from switchboard.relay.addresses import EXEMPT_NETWORKS, IPNetwork
from switchboard.relay.settings import RelaySettings

log = logging.getLogger("switchboard.relay.coturn")

# Peers coturn never relays to (decision 0704): the exempt ranges (the operator's own network),
# "this network", carrier-grade NAT (where clouds put internal services, e.g. 100.100.100.200)
# and Azure's host endpoint 168.63.129.16 (its 169.254.169.254 is link-local already); then the
# same IPv4 ranges written as IPv6 (IPv4-mapped and NAT64), with every IPv4-mapped address (no
# real IPv6 peer has one) and the local-use NAT64 prefix 64:ff9b:1::/48.
# coturn also refuses multicast (no-multicast-peers), 0.0.0.0 and loopback by itself. This
# host's own public addresses cannot be listed here (two peers relayed by the same relay talk
# through them); the packet filter drops coturn's traffic to them instead (firewall.py).
_DENIED_V4: tuple[ipaddress.IPv4Network, ...] = (
    *(n for n in EXEMPT_NETWORKS if isinstance(n, ipaddress.IPv4Network)),
    ipaddress.IPv4Network("0.0.0.0/8"),
    ipaddress.IPv4Network("100.64.0.0/10"),
    ipaddress.IPv4Network("168.63.129.16/32"),
)
_NAT64 = int(ipaddress.IPv6Address("64:ff9b::"))
_MAPPED = int(ipaddress.IPv6Address("::ffff:0:0"))


def with_ipv6_forms(networks: Iterable[IPNetwork]) -> tuple[IPNetwork, ...]:
    """``networks``, each IPv4 one followed by the IPv6 spellings that reach it: IPv4-mapped
    (``::ffff:a.b.c.d``) and NAT64 (``64:ff9b::a.b.c.d``). coturn compares a peer with a range
    of its own family only."""
    denied: list[IPNetwork] = []
    for network in networks:
        denied.append(network)
        if isinstance(network, ipaddress.IPv4Network):
            denied.extend(
                ipaddress.IPv6Network(
                    (prefix + int(network.network_address), 96 + network.prefixlen)
                )
                for prefix in (_MAPPED, _NAT64)
            )
    return tuple(denied)


DENIED_PEERS: tuple[IPNetwork, ...] = (
    *with_ipv6_forms(_DENIED_V4),
    *(n for n in EXEMPT_NETWORKS if isinstance(n, ipaddress.IPv6Network)),
    ipaddress.IPv6Network("::ffff:0:0/96"),
    ipaddress.IPv6Network("64:ff9b:1::/48"),
)


def operator_denied_peers(settings: RelaySettings) -> tuple[IPNetwork, ...]:
    """The operator's ``SWITCHBOARD_RELAY_DENIED_PEERS`` with their IPv6 forms (decision 0707)."""
    return with_ipv6_forms(ipaddress.ip_network(cidr) for cidr in settings.denied_peers)


def _range(network: IPNetwork) -> str:
    return f"{network.network_address}-{network.broadcast_address}"


def render_config(settings: RelaySettings) -> str:
    lines = [
        f"listening-port={settings.turn_port}",
        f"tcp-proxy-port={settings.proxy_port}",
        *(f"listening-ip={ip}" for ip in settings.listening_ips),
        *(f"relay-ip={ip}" for ip in settings.relay_ips),
        *([f"external-ip={settings.external_ip}"] if settings.external_ip else []),
        f"min-port={settings.min_relay_port}",
        f"max-port={settings.max_relay_port}",
        "use-auth-secret",
        f"static-auth-secret={settings.secret}",
        f"realm={settings.realm}",
        "fingerprint",
        f"user-quota={settings.user_quota}",
        f"total-quota={settings.total_quota}",
        "stale-nonce=600",
        "no-tls",
        "no-dtls",
        "no-cli",
        "no-multicast-peers",
        "no-tcp-relay",  # RFC 6062 TCP allocations: media never needs them (decision 0704)
        "no-rfc5780",
        "no-stun-backward-compatibility",
        "response-origin-only-with-rfc5780",
        "no-software-attribute",
        *(f"denied-peer-ip={_range(network)}" for network in DENIED_PEERS),
        *(f"denied-peer-ip={_range(network)}" for network in operator_denied_peers(settings)),
        "log-file=stdout",
        "simple-log",
        f"pidfile={settings.run_dir / 'turnserver.pid'}",
        f"userdb={settings.run_dir / 'turndb'}",
    ]
    return "\n".join(lines) + "\n"


def write_config(settings: RelaySettings) -> Path:
    """Write turnserver.conf under the run directory, readable by its owner only (the shared
    secret is in it)."""
    settings.run_dir.mkdir(parents=True, exist_ok=True)
    path = settings.run_dir / "turnserver.conf"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(render_config(settings))
    return path


class Coturn:
    """Runs turnserver and restarts it when it exits (one second apart, at most). With ``gid``,
    turnserver runs with that group, by which the packet filter tells its sockets apart."""

    def __init__(self, settings: RelaySettings, *, gid: int | None = None) -> None:
        self.settings = settings
        self.gid = gid
        self.process: asyncio.subprocess.Process | None = None
        self.restarts = 0
        self._task: asyncio.Task[None] | None = None
        self._pump_task: asyncio.Task[None] | None = None
        self._stopping = False

    async def start(self) -> None:
        config = write_config(self.settings)
        self._stopping = False
        await self._spawn(config)
        self._task = asyncio.create_task(self._supervise(config))

    async def _spawn(self, config: Path) -> None:
        self.process = await asyncio.create_subprocess_exec(
            self.settings.turnserver, "-c", str(config),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            group=self.gid,
        )  # fmt: skip
        self._pump_task = asyncio.create_task(self._pump(self.process))

    async def _pump(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        async for line in process.stdout:
            log.debug("turnserver: %s", line.decode(errors="replace").rstrip())

    async def _supervise(self, config: Path) -> None:
        while not self._stopping:
            assert self.process is not None
            code = await self.process.wait()
            if self._stopping:
                return
            log.warning("turnserver exited with %s; restarting", code)
            self.restarts += 1
            await asyncio.sleep(1.0)
            await self._spawn(config)

    async def wait_ready(self, within: float = 10.0) -> None:
        """Wait until coturn accepts TCP on its PROXY-protocol port."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.settings.proxy_port)
            except OSError:
                if loop.time() > deadline:
                    raise RuntimeError("turnserver did not start listening") from None
                if self.process is not None and self.process.returncode is not None:
                    raise RuntimeError("turnserver exited at start") from None
                await asyncio.sleep(0.05)
                continue
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            return

    async def stop(self) -> None:
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            try:
                await asyncio.wait_for(self.process.wait(), 5)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
