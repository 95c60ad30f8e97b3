"""Real components for the bridge tests: sipp, the bridge process, a silent trunk."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tests import ports

SCENARIOS = Path(__file__).parent / "scenarios"
SECRET = "bridge-test-secret"


def free_port(kind: int = socket.SOCK_DGRAM) -> int:
    """A port free for UDP and TCP on loopback (SIP listens on both); even for UDP (RTP)."""
    return ports.free_port(even=kind == socket.SOCK_DGRAM)


@dataclass
class Sipp:
    """One sipp process running one of the project's scenarios for one call."""

    scenario: str
    port: int
    process: asyncio.subprocess.Process | None = None
    log: Path | None = None

    async def start(
        self, workdir: Path, *, keys: dict[str, str] | None = None, echo: bool = False,
        extra: Iterable[str] = (), timeout_sec: int = 25,
    ) -> Sipp:  # fmt: skip
        args = ["sipp", "-sf", str(SCENARIOS / self.scenario), "-i", "127.0.0.1",
                "-p", str(self.port), "-m", "1", "-nostdin", "-timeout", f"{timeout_sec}s",
                "-timeout_error"]  # fmt: skip
        for key, value in (keys or {}).items():
            args += ["-key", key, value]
        if echo:
            args += [
                "-mi",
                "127.0.0.1",
                "-mp",
                str(ports.free_port(even=True, span=4)),
                "-rtp_echo",
            ]
        args += list(extra)
        self.log = workdir / f"sipp-{self.scenario}-{self.port}.log"
        out = self.log.open("wb")
        self.process = await asyncio.create_subprocess_exec(
            *args, cwd=workdir, stdin=subprocess.DEVNULL, stdout=out, stderr=out
        )
        out.close()
        return self

    async def exit_code(self, within: float = 30.0) -> int:
        assert self.process is not None
        return await asyncio.wait_for(self.process.wait(), within)

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()


class SilentTrunk(asyncio.DatagramProtocol):
    """A trunk that never answers: counts the datagrams (INVITE retransmissions) it swallows."""

    def __init__(self) -> None:
        self.received: list[bytes] = []

    def datagram_received(self, data: bytes, addr: tuple[str | object, ...]) -> None:
        self.received.append(data)

    @property
    def invites(self) -> int:
        return sum(1 for data in self.received if data.startswith(b"INVITE "))

    @classmethod
    @contextlib.asynccontextmanager
    async def on(cls, port: int) -> AsyncIterator[SilentTrunk]:
        """A silent trunk listening on ``port`` of 127.0.0.1 while the block runs."""
        protocol = cls()
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(
            lambda: protocol, local_addr=("127.0.0.1", port)
        )
        try:
            yield protocol
        finally:
            transport.close()


@dataclass
class BridgeProcess:
    """``switchboard bridge serve`` as a child process."""

    trunks: Path
    env: dict[str, str] = field(default_factory=dict)
    engine: str = "tone"
    options: list[str] = field(default_factory=list)  # more options of ``bridge serve``
    http_port: int = 0
    sip_port: int = 0
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def start(self, workdir: Path, platform_url: str = "", within: float = 60.0) -> None:
        """Start (or restart, on the same ports) and wait for the ready line."""
        self.http_port = self.http_port or free_port(socket.SOCK_STREAM)
        self.sip_port = self.sip_port or free_port()
        lo = 30000 + (os.getpid() % 300) * 100
        self.log = workdir / f"bridge-{self.http_port}-{time.monotonic_ns()}.log"
        env = {**os.environ, "SWITCHBOARD_BRIDGE_SECRET": SECRET, **self.env}
        env.pop("SWITCHBOARD_PUBLIC_BASE_URL", None)
        args = [
            sys.executable, "-m", "switchboard", "bridge", "serve",
            "--listen", f"127.0.0.1:{self.http_port}", "--sip", f"127.0.0.1:{self.sip_port}",
            "--trunks", str(self.trunks), "--rtp-ports", f"{lo}-{lo + 98}",
            "--engine", self.engine, "--sip-t1-ms", "50", "--log-level", "INFO",
        ]  # fmt: skip
        if platform_url:
            args += ["--platform-url", platform_url]
        args += self.options
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + within
        while b"bridge ready" not in self.log.read_bytes():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the bridge did not start:\n" + self.log.read_text())
            time.sleep(0.1)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def output(self) -> str:
        return self.log.read_text() if self.log else ""
