"""``switchboard serve`` refuses a signaling frame above the limit from its header, before
buffering its payload."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import struct
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from switchboard.settings import Settings
from tests import ports
from tests.factories import TenantFixture

pytestmark = pytest.mark.slow


def _start(settings: Settings, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "SWITCHBOARD_DATABASE_URL": settings.resolved_database_url,
        "SWITCHBOARD_DATA_DIR": str(settings.data_dir),
        "SWITCHBOARD_SECRET_KEY": settings.secret_key,
        "SWITCHBOARD_PUBLIC_BASE_URL": settings.public_base_url,
        "SWITCHBOARD_ROOM_MAX_MESSAGE_BYTES": "4096",
    }
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "switchboard", "serve", "--no-workers",
             "--host", "127.0.0.1", "--port", str(port)],
            env=env, stdout=out, stderr=out,
        )  # fmt: skip


@pytest.fixture
async def serve(settings: Settings, tmp_path: Path) -> AsyncIterator[int]:
    port = ports.free_port()
    log = tmp_path / "serve.log"
    process = _start(settings, port, log)
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        async with httpx.AsyncClient(timeout=1.0) as client:
            while True:  # a process starting: polled until it answers, by design
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"http://127.0.0.1:{port}/healthz")).is_success:
                        break
                assert process.poll() is None, log.read_text()[-3000:]
                assert loop.time() < deadline, log.read_text()[-3000:]
                await asyncio.sleep(0.1)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=15)


async def test_a_frame_above_the_limit_is_refused_from_its_header(
    serve: int, acme: TenantFixture
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", serve)
    key = base64.b64encode(os.urandom(16)).decode()
    handshake = (
        f"GET /signal.ashx?room=x HTTP/1.1\r\nHost: {acme.host}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    writer.write(handshake.encode())
    assert b" 101 " in await reader.readuntil(b"\r\n\r\n")
    # A text frame announcing 8 MiB, of which only 1 KiB is sent: the limit is in the header.
    writer.write(bytes([0x81, 0x80 | 127]) + struct.pack("!Q", 8 << 20) + b"\0" * 4 + b"a" * 1024)
    await writer.drain()
    async with asyncio.timeout(10):
        frame = await reader.read(2)
    assert frame[0] == 0x88  # a close frame, while the announced payload never came
    body = await reader.readexactly(frame[1] & 0x7F)
    assert struct.unpack("!H", body[:2])[0] == 1009
    writer.close()
