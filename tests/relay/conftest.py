"""Fixtures of the relay tests: test hosts in network namespaces, certificates, a relay.

Test hosts sit behind veth pairs with addresses in 203.0.113.0/24 and 198.51.100.0/24, and a /64
of 2001:db8::/32 each: outside the exempt ranges, so the rules apply to them, and never routed on
the internet. Everything
created here (namespaces, links, the nftables table, coturn) is removed afterwards.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from switchboard.kit.clock import ManualClock, SystemClock
from switchboard.kit.db import Database
from switchboard.relay import service
from switchboard.relay.credentials import turn_credentials
from switchboard.relay.server import RelayServer
from switchboard.relay.settings import RelaySettings
from tests.certs import self_signed_pem
from tests.ports import free_port

CLIENT = Path(__file__).with_name("hostclient.py")
SECRET = "relay-test-shared-secret"


def needs_root() -> None:
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("nft"):
        pytest.skip("needs root, iproute2 and nft")
    if not shutil.which("turnserver"):
        pytest.skip("needs coturn (make install)")


def rest_credentials() -> tuple[str, str]:
    """A TURN credential for the test relay; coturn checks its expiry against the real time, so
    it is made on the system clock."""
    return turn_credentials(secret=SECRET, label="test-room", clock=SystemClock(), ttl=600)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@dataclass
class NetHost:
    """A host in its own network namespace; ``address`` is its public-looking IPv4 address and
    ``gateway`` the relay side of its link; ``address6`` and ``gateway6`` the same in IPv6
    (``prefix6`` is the link's /64, ``prefix6::1`` the relay side)."""

    namespace: str | None
    address: str
    gateway: str
    ca_file: Path
    prefix6: str = ""
    link: str = ""  # the relay side of the veth pair

    @property
    def gateway6(self) -> str:
        return f"{self.prefix6}::1"

    @property
    def address6(self) -> str:
        return f"{self.prefix6}::2"

    def add_address(self, cidr: str) -> str:
        """One more address of the host (``address/prefix``): the address."""
        assert self.namespace is not None
        _ip("-n", self.namespace, "addr", "add", cidr, "dev", "eth0", "nodad")
        return cidr.split("/")[0]

    def add_address6(self, suffix: str) -> str:
        """One more address of the host's /64 (``prefix6::<suffix>``)."""
        return self.add_address(f"{self.prefix6}::{suffix}/64")

    def add_link6(self, prefix: str) -> tuple[str, str]:
        """Another /64 on the link (a unique-local or link-local one): its relay side
        ``prefix::1`` and host side ``prefix::2``."""
        assert self.namespace is not None
        _ip("addr", "add", f"{prefix}::1/64", "dev", self.link, "nodad")
        _ip("-n", self.namespace, "addr", "add", f"{prefix}::2/64", "dev", "eth0", "nodad")
        return f"{prefix}::1", f"{prefix}::2"

    async def run(self, action: str, *args: object, count: int = 1, source: str = "") -> list[str]:
        """Run hostclient.py in the namespace, concurrently with the relay's event loop
        (``source``: the address to send from)."""
        return await self.finish(await self.start(action, *args, count=count, source=source))

    async def start(
        self, action: str, *args: object, count: int = 1, source: str = ""
    ) -> asyncio.subprocess.Process:
        """Start hostclient.py in the namespace; ``finish`` gives its results."""
        env = {**os.environ, "RELAY_TEST_CA": str(self.ca_file), "RELAY_TEST_COUNT": str(count),
               "RELAY_TEST_SOURCE": source}  # fmt: skip
        prefix = ("ip", "netns", "exec", self.namespace) if self.namespace else ()
        return await asyncio.create_subprocess_exec(
            *prefix, sys.executable, str(CLIENT), action,
            *(str(a) for a in args),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
        )  # fmt: skip

    @staticmethod
    async def ready(process: asyncio.subprocess.Process) -> None:
        """Wait for the 'ready' line of an action that listens (udp-sink)."""
        assert process.stdout is not None
        assert (await asyncio.wait_for(process.stdout.readline(), 30)).strip() == b"ready"

    @staticmethod
    async def finish(process: asyncio.subprocess.Process) -> list[str]:
        out, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode == 0, err.decode()
        result: list[str] = json.loads(out.decode().splitlines()[-1])
        return result


def _make_host(prefix: str, ca_file: Path, stack: list[tuple[str, str]]) -> NetHost:
    tag = uuid.uuid4().hex[:6]
    namespace, outer, inner = f"sbr-{tag}", f"sbr{tag}a", f"sbr{tag}b"
    base = random.randrange(0, 64) * 4
    gateway, address = f"{prefix}.{base + 1}", f"{prefix}.{base + 2}"
    prefix6 = f"2001:db8:{random.randrange(0x10000):x}:{random.randrange(0x10000):x}"
    _ip("netns", "add", namespace)
    stack.append(("netns", namespace))
    _ip("link", "add", outer, "type", "veth", "peer", "name", inner, "netns", namespace)
    stack.append(("link", outer))
    _ip("addr", "add", f"{gateway}/30", "dev", outer)
    _ip("addr", "add", f"{prefix6}::1/64", "dev", outer, "nodad")
    _ip("link", "set", outer, "up")
    _ip("-n", namespace, "link", "set", inner, "name", "eth0")
    _ip("-n", namespace, "addr", "add", f"{address}/30", "dev", "eth0")
    _ip("-n", namespace, "addr", "add", f"{prefix6}::2/64", "dev", "eth0", "nodad")
    _ip("-n", namespace, "link", "set", "eth0", "up")
    _ip("-n", namespace, "link", "set", "lo", "up")
    _ip("-n", namespace, "route", "add", "default", "via", gateway)
    _ip("-n", namespace, "-6", "route", "add", "default", "via", f"{prefix6}::1")
    return NetHost(namespace=namespace, address=address, gateway=gateway, ca_file=ca_file,
                   prefix6=prefix6, link=outer)  # fmt: skip


@pytest.fixture
def hosts(certificates: Certificates) -> Iterator[tuple[NetHost, NetHost]]:
    """Two test hosts: one in 203.0.113.0/24, one in 198.51.100.0/24."""
    needs_root()
    stack: list[tuple[str, str]] = []
    try:
        yield (
            _make_host("203.0.113", certificates.ca_file, stack),
            _make_host("198.51.100", certificates.ca_file, stack),
        )
    finally:
        for kind, name in reversed(stack):
            if kind == "link":
                subprocess.run(["ip", "link", "del", name], capture_output=True)
            else:
                subprocess.run(["ip", "netns", "del", name], capture_output=True)


@pytest.fixture
def loopback(certificates: Certificates) -> NetHost:
    """The machine itself, talking over loopback (always exempt)."""
    return NetHost(
        namespace=None, address="127.0.0.1", gateway="127.0.0.1", ca_file=certificates.ca_file
    )


@dataclass
class Certificates:
    cert_file: Path
    key_file: Path
    ca_file: Path

    def issue(self, common_name: str) -> None:
        """Write a fresh self-signed certificate (and its key) in place; the CA file trusts
        every certificate issued so far."""
        pem, key = self_signed_pem(common_name, valid_for=dt.timedelta(days=2))
        self.key_file.write_bytes(key)
        self.cert_file.write_bytes(pem)
        with self.ca_file.open("ab") as handle:
            handle.write(pem)


@pytest.fixture
def certificates(tmp_path: Path) -> Certificates:
    certs = Certificates(tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "ca.pem")
    certs.issue("relay-one")
    return certs


@pytest.fixture
def relay_database(db_url: str) -> str:
    """The database the relay reads its ACL from: both backends here; modules whose tests never
    touch the ACL override it with one SQLite copy (sqlite_database)."""
    return db_url


@pytest.fixture
def sqlite_database(sqlite_template: Path, tmp_path: Path) -> str:
    target = tmp_path / "relay.db"
    shutil.copyfile(sqlite_template, target)
    return f"sqlite+aiosqlite:///{target}"


@pytest.fixture
def relay_settings(
    relay_database: str, tmp_path: Path, certificates: Certificates, hosts: tuple[NetHost, NetHost]
) -> RelaySettings:
    a, b = hosts
    relay_port = random.randrange(40000, 59000, 100)
    return RelaySettings(
        database_url=relay_database,
        secret=SECRET,
        listening_ips=("127.0.0.1", a.gateway, b.gateway),
        relay_ips=(a.gateway,),
        bind_host="0.0.0.0",
        turn_port=free_port(),
        tls_ports=(free_port(), free_port()),
        proxy_port=free_port(),
        min_relay_port=relay_port,
        max_relay_port=relay_port + 99,
        cert_file=certificates.cert_file,
        key_file=certificates.key_file,
        handshake_timeout=2.0,
        per_ip_allocations=2,
        binding_rate_per_second=1,
        binding_burst=4,
        run_dir=tmp_path / "relay",
        nft_table=f"sbr_test_{uuid.uuid4().hex[:8]}",
        metrics_port=0,
    )


def dual_stack(
    settings: RelaySettings, *hosts: NetHost, listen: tuple[str, ...] = ()
) -> RelaySettings:
    """``settings`` with coturn relaying from the first host's link in both families, listening
    on every host's IPv6 gateway too (and on ``listen``), and the guard bound to ``::``."""
    return settings.model_copy(
        update={
            "listening_ips": (*settings.listening_ips, *(h.gateway6 for h in hosts), *listen),
            "relay_ips": (hosts[0].gateway, hosts[0].gateway6),
            "bind_host": "::",
        }
    )


@asynccontextmanager
async def running(settings: RelaySettings, clock: ManualClock) -> AsyncIterator[RelayServer]:
    """A relay with these settings, started, and stopped afterwards."""
    database = Database(settings.database_url)
    server = RelayServer(settings, database=database, clock=clock)
    try:
        await server.start()
        yield server
    finally:
        await server.stop()
        await database.dispose()


async def acl(relay: RelayServer, action: str, *args: str, scope: str = "any") -> int:
    """Change the ACL in the database from a session of its own, as `switchboard relay acl`
    does (tests/relay/test_acl_cli.py drives the command itself); the relay sees it at its next
    tick."""
    async with relay.database.transaction() as session:
        if action == "remove":
            await service.remove_rule(session, rule_id=int(args[0]))
            return int(args[0])
        rule = await service.add_rule(
            session, subject=args[0], value=args[1], scope=scope, note="", clock=relay.clock
        )
        return rule.id


@pytest.fixture
async def relay(relay_settings: RelaySettings, clock: ManualClock) -> AsyncIterator[RelayServer]:
    async with running(relay_settings, clock) as server:
        yield server
