"""coturn's configuration, written by the relay, and the supervised ``turnserver`` process.

coturn itself serves UDP on the TURN port (filtered by the packet filter in front) and a
PROXY-protocol TCP listener that only the guard feeds, so coturn sees every TCP and TLS client's
real address. coturn's own TLS and DTLS are off: the guard terminates TLS.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path

from switchboard.relay.addresses import EXEMPT_NETWORKS
from switchboard.relay.settings import RelaySettings

log = logging.getLogger("switchboard.relay.coturn")

# Peers coturn never relays to: the exempt ranges (no relaying into the operator's own network)
# plus "this network" and multicast.
DENIED_PEERS = (*(str(n) for n in EXEMPT_NETWORKS), "0.0.0.0/8", "100.64.0.0/10")


def _range(cidr: str) -> str:
    import ipaddress

    network = ipaddress.ip_network(cidr)
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
        "no-rfc5780",
        "no-stun-backward-compatibility",
        "response-origin-only-with-rfc5780",
        "no-software-attribute",
        *(f"denied-peer-ip={_range(cidr)}" for cidr in DENIED_PEERS),
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
    """Runs turnserver and restarts it when it exits (one second apart, at most)."""

    def __init__(self, settings: RelaySettings) -> None:
        self.settings = settings
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
