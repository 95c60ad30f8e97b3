"""Real ``switchboard serve`` processes sharing rooms through Redis (decision 0840), for the
tests of the fan-out: the processes, a Redis of a test's own, and the fixtures every such test
module imports (PostgreSQL only, the real clock)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from switchboard.kit.clock import Clock, SystemClock
from switchboard.settings import Settings
from tests import ports
from tests.rooms.conftest import Client

SHARED_REDIS = os.environ.get("SWITCHBOARD_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def clock() -> Clock:
    """The processes write events due on the real clock: the tests deliver them on it."""
    return SystemClock()


@pytest.fixture(autouse=True)
def postgres_only(settings: Settings) -> None:
    if settings.resolved_database_url.startswith("sqlite"):
        pytest.skip("rooms span processes on PostgreSQL only; SQLite runs one serve process")


class Serve:
    """A ``switchboard serve`` process on a free port, its log in ``log``."""

    def __init__(
        self, settings: Settings, fanout_url: str, log: Path, env: dict[str, str] | None = None
    ) -> None:
        self.port = ports.free_port()
        self.log = log
        env = {
            **os.environ,
            "SWITCHBOARD_DATABASE_URL": settings.resolved_database_url,
            "SWITCHBOARD_DATA_DIR": str(settings.data_dir),
            "SWITCHBOARD_SECRET_KEY": settings.secret_key,
            "SWITCHBOARD_PUBLIC_BASE_URL": settings.public_base_url,
            "SWITCHBOARD_ROOM_FANOUT_URL": fanout_url,
            "SWITCHBOARD_LOG_LEVEL": "INFO",
            **(env or {}),
        }
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "switchboard", "serve", "--no-workers",
                 "--host", "127.0.0.1", "--port", str(self.port)],
                env=env, stdout=out, stderr=out,
            )  # fmt: skip

    async def ready(self, within: float = 60) -> None:
        # A process starting: polled until it answers, by design.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        async with httpx.AsyncClient(timeout=1.0) as client:
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"http://127.0.0.1:{self.port}/healthz")).is_success:
                        return
                assert self.process.poll() is None, self.log.read_text()[-3000:]
                assert loop.time() < deadline, self.log.read_text()[-3000:]
                await asyncio.sleep(0.1)

    async def join(
        self, host: str, room: str, name: str, *, forwarded: str = "", **extra: Any
    ) -> Client:
        """``forwarded``: the client address an ``X-Forwarded-For`` names (counted when the
        process trusts 127.0.0.1 as a proxy, ``SWITCHBOARD_TRUSTED_PROXIES``)."""
        uri = f"ws://{host}/signal.ashx?room={room}"
        headers = {"X-Forwarded-For": forwarded} if forwarded else {}
        ws = await connect(
            uri, host="127.0.0.1", port=self.port, open_timeout=15, additional_headers=headers
        )
        client = Client(ws)
        await client.send(type="join", name=name, **extra)
        return client

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    started: list[Serve] = []

    async def serve(
        settings: Settings, fanout_url: str = SHARED_REDIS, env: dict[str, str] | None = None
    ) -> Serve:
        """``env``: more ``SWITCHBOARD_*`` variables of the process."""
        process = Serve(settings, fanout_url, tmp_path / f"serve-{len(started)}.log", env)
        started.append(process)
        await process.ready()
        return process

    yield serve
    for process in started:
        process.stop()


@dataclass
class PrivateRedis:
    url: str
    process: subprocess.Popen[bytes]


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    """A Redis of this test alone, so that killing it leaves the shared one be."""
    port = ports.free_port()
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    yield PrivateRedis(f"redis://127.0.0.1:{port}/0", process)
    if process.poll() is None:
        process.kill()
        process.wait()
