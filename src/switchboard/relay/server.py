"""``switchboard relay serve``: the packet filter, coturn and the guard, put together.

One ``tick`` (every ``reload_interval`` seconds) re-reads the ACL from the database and pushes
it to the guard and the packet filter, reloads a changed certificate, refreshes the counters,
and writes the stats line when it is due on the injected clock.
"""

from __future__ import annotations

import asyncio
import grp
import logging
import resource

from prometheus_client import CollectorRegistry

from switchboard.kit.clock import Clock
from switchboard.kit.db import Database
from switchboard.relay import service
from switchboard.relay.acl import Acl
from switchboard.relay.certificates import CertificateStore
from switchboard.relay.coturn import Coturn
from switchboard.relay.firewall import Firewall
from switchboard.relay.guard import Guard
from switchboard.relay.hostports import listening_in
from switchboard.relay.settings import RelaySettings
from switchboard.relay.stats import RelayStats, StatsCollector, StatsTicker
from switchboard.relay.tracker import FailureTracker

log = logging.getLogger("switchboard.relay")
MIN_SECRET_LENGTH = 16


DESCRIPTORS_PER_CONNECTION = 3  # a relayed TLS connection: the client's, a dup, coturn's


def raise_descriptor_limit() -> int:
    """Lift the soft limit on open descriptors to the hard one, and return it. Each relayed TLS
    connection holds three, so the usual soft limit (1024) would let twenty clients at their
    per-IP quota take every descriptor the guard has."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def coturn_gid(settings: RelaySettings) -> int | None:
    """The group coturn runs with when the packet filter is on (it matches coturn's sockets by
    it); None without the filter. Raises ValueError for a missing group or root's."""
    if not settings.firewall:
        return None
    try:
        gid = grp.getgrnam(settings.coturn_group).gr_gid
    except KeyError:
        raise ValueError(
            f"SWITCHBOARD_RELAY_COTURN_GROUP: no group {settings.coturn_group!r} on this host"
            " (the coturn package creates `turnserver`)"
        ) from None
    if gid == 0:
        raise ValueError("SWITCHBOARD_RELAY_COTURN_GROUP may not be root's group")
    return gid


class RelayServer:
    def __init__(self, settings: RelaySettings, *, database: Database, clock: Clock) -> None:
        if len(settings.secret) < MIN_SECRET_LENGTH:
            raise ValueError(
                f"SWITCHBOARD_RELAY_SECRET must hold at least {MIN_SECRET_LENGTH} characters"
                " (coturn's shared secret; e.g. `openssl rand -hex 32`)"
            )
        self.settings = settings
        self.database = database
        self.clock = clock
        self.stats = RelayStats()
        self.certificates = CertificateStore(settings.cert_file, settings.key_file)
        self.guard = Guard(
            clock=clock,
            certificates=self.certificates,
            tracker=FailureTracker(),
            stats=self.stats,
            upstream=("127.0.0.1", settings.proxy_port),
            handshake_timeout=settings.handshake_timeout,
            per_ip_connections=settings.per_ip_allocations,
            max_connections=settings.max_connections,
        )
        gid = coturn_gid(settings)
        self.firewall = Firewall(settings, coturn_gid=gid) if settings.firewall else None
        self.coturn = Coturn(settings, gid=gid)
        self.registry = CollectorRegistry()
        self.registry.register(StatsCollector(lambda: self.stats))
        self.ticker = StatsTicker(settings.stats_interval, clock.now())
        self.tls_ports: list[int] = []

    async def start(self) -> None:
        self.certificates.check()
        low, high = self.settings.min_relay_port, self.settings.max_relay_port
        exposed = listening_in(low, high)
        if exposed:
            log.warning(
                "%s listen inside the relayed-media range %d-%d: every peer can reach them "
                "through the relay; keep that range to coturn",
                ", ".join(exposed), low, high,
            )  # fmt: skip
        if self.firewall is not None:
            await self.firewall.install()
        await self.reload_acl()
        await self.coturn.start()
        await self.coturn.wait_ready()
        for port in self.settings.tls_ports:
            self.tls_ports.append(await self.guard.listen(self.settings.bind_host, port))
        await self.guard.listen(self.settings.bind_host, self.settings.turn_port, tls=False)
        log.info(
            "relay up: TURN %s udp/tcp, TLS %s, coturn PROXY port %s",
            self.settings.turn_port, ", ".join(map(str, self.tls_ports)), self.settings.proxy_port,
        )  # fmt: skip
        log.info(
            "peers denied besides the built-in ones: %s", ", ".join(self.settings.denied_peers)
            or "none (SWITCHBOARD_RELAY_DENIED_PEERS)",
        )  # fmt: skip

    async def stop(self) -> None:
        await self.guard.close()
        await self.coturn.stop()
        if self.firewall is not None:
            await self.firewall.remove()

    async def reload_acl(self) -> Acl:
        async with self.database.transaction(read_only=True) as session:
            acl = await service.load_acl(session)
        if acl != self.guard.acl:
            log.info("ACL: %d rules", len(acl.rules))
        self.guard.acl = acl
        if self.firewall is not None:
            await self.firewall.apply(acl)
        return acl

    async def refresh_stats(self) -> RelayStats:
        self.stats.acl_blocked["tcp"] = self.guard.plain_acl_drops
        if self.firewall is not None:
            counters = await self.firewall.counters()
            self.stats.acl_blocked["udp"] = counters["acl_udp"]
            self.stats.acl_blocked["tcp"] = counters["acl_tcp"] + self.guard.plain_acl_drops
            self.stats.quota_rejects["turn"] = counters["over_quota"]
            self.stats.binding_rate_drops = counters["binding_rate"]
            self.stats.relay_to_self_drops = counters["to_self"]
        self.stats.currently_blocked = self.guard.currently_blocked()
        return self.stats

    async def tick(self) -> None:
        await self.reload_acl()
        if self.certificates.check():
            self.stats.cert_reloads += 1
        await self.refresh_stats()
        if self.ticker.due(self.clock.now()):
            log.info("%s", self.stats.line())

    async def run_forever(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception:  # a database hiccup must not take the relay down
                log.exception("relay tick failed; the previous rules stay in force")
            await asyncio.sleep(self.settings.reload_interval)
