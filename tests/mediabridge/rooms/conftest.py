"""A real Janus (the package's generated configuration, its own ports and folder) and a bridge
process that uses it, once per module; a real HTTP server standing in for the platform's
room-events endpoint."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from aiohttp import web

from switchboard.bridge import protocol
from switchboard.mediabridge.rooms.process import JANUS, LocalJanus
from tests.aioserve import serving
from tests.mediabridge.components import SECRET, BridgeProcess, free_port

pytestmark = pytest.mark.skipif(shutil.which(JANUS) is None, reason="janus is not installed")


@pytest.fixture(scope="module")
def janus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalJanus]:
    workdir = tmp_path_factory.mktemp("janus")
    lo = 40000 + (os.getpid() % 200) * 100
    config = LocalJanus(workdir=workdir, rtp_ports=(lo, lo + 99))
    path = config.write()
    with (workdir / "janus.log").open("wb") as out:
        process = subprocess.Popen(
            [JANUS, "--config", str(path), "--configs-folder", str(path.parent)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    deadline = time.monotonic() + 15
    while True:
        try:
            if httpx.get(config.url + "/info", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("janus did not start:\n" + (workdir / "janus.log").read_text())
        time.sleep(0.05)
    yield config
    process.terminate()
    process.wait(5)


@pytest.fixture(scope="module")
def platform_port() -> int:
    return free_port(socket.SOCK_STREAM)


def start_bridge(workdir: Path, sfu_table: str, platform_port: int, env: dict[str, str]
                 ) -> BridgeProcess:  # fmt: skip
    trunks = workdir / f"bridge-{time.monotonic_ns()}.toml"
    trunks.write_text(f'[trunks.none]\nuri = "sip:127.0.0.1:{free_port()}"\n\n[sfu]\n{sfu_table}\n')
    bridge = BridgeProcess(trunks=trunks, env=env)
    bridge.start(workdir, platform_url=f"http://127.0.0.1:{platform_port}")
    return bridge


@pytest.fixture(scope="module")
def bridge(
    tmp_path_factory: pytest.TempPathFactory, janus: LocalJanus, platform_port: int
) -> Iterator[BridgeProcess]:
    table = (f'janus = "{janus.url}"\nadmin_url = "{janus.admin_url}"\n'
             'admin_secret_env = "TEST_JANUS_ADMIN_SECRET"')  # fmt: skip
    process = start_bridge(
        tmp_path_factory.mktemp("bridge"), table, platform_port,
        {"TEST_JANUS_ADMIN_SECRET": janus.admin_secret},
    )  # fmt: skip
    yield process
    process.kill()


@dataclass
class RoomEvents:
    """What the platform's room-events endpoint received (signature checked)."""

    events: list[dict[str, object]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)  # on the calls' callback path
    bad_signatures: int = 0


@pytest.fixture
async def room_events(platform_port: int) -> AsyncIterator[RoomEvents]:
    received = RoomEvents()

    async def accept(request: web.Request) -> web.Response:
        body = await request.read()
        if not protocol.verify(SECRET, body, request.headers.get(protocol.SIGNATURE_HEADER)):
            received.bad_signatures += 1
            return web.json_response({"error": "bad_signature"}, status=401)
        kept = received.events if request.path == protocol.ROOM_EVENTS_PATH else received.calls
        kept.append(orjson.loads(body))
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post(protocol.ROOM_EVENTS_PATH, accept)
    app.router.add_post(protocol.CALLBACK_PATH, accept)
    async with serving(app, port=platform_port):
        yield received


async def signed(client: httpx.AsyncClient, url: str, payload: Mapping[str, object],
                 secret: str = SECRET) -> httpx.Response:  # fmt: skip
    body = orjson.dumps({"protocol": 1, **payload})
    headers = {protocol.SIGNATURE_HEADER: protocol.sign(secret, body),
               "Content-Type": "application/json"}  # fmt: skip
    return await client.post(url, content=body, headers=headers)
