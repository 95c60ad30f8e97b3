"""Authenticated list endpoint vs a bare ASGI hello, on one server core.

Both apps are served by uvicorn pinned to CPU 0; wrk (Debian package ``wrk``) drives them from
CPU 1 over loopback. The list is ``GET /api.ashx/v1/api-keys`` returning a 50-item page, called
with an OIDC access token (verified once, then served from the verified-token cache) and with an
API key (one indexed lookup per request).

    .venv/bin/python bench/bench_api.py [--duration 10] [--connections 32] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from switchboard.identity import service as identity
from switchboard.kit.db import Base
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants

HELLO_APP = """
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"hello":"world"}'})
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def prepare(settings: Settings) -> tuple[str, str]:
    runtime = Runtime(settings)
    async with runtime.db.engine.begin() as conn:
        await conn.run_sync(Base.metadata.drop_all)
        await conn.run_sync(Base.metadata.create_all)
    async with runtime.db.transaction() as session:
        tenant = await tenants.create_tenant(
            session, name="bench", domains=["127.0.0.1"], clock=runtime.clock, box=runtime.box
        )
        user = await identity.create_user(
            session, tenant=tenant, username="admin", password="bench-password",
            role="admin", clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
        await identity.create_client(session, tenant=tenant, client_id="cli", clock=runtime.clock)
        key = ""
        for i in range(50):
            _, key = await identity.create_api_key(
                session, tenant_id=tenant.id, user=user, name=f"k{i}", clock=runtime.clock
            )
    await runtime.db.dispose()
    return key, ""


def serve(env: dict[str, str], target: str, port: int, app_dir: str) -> subprocess.Popen[bytes]:
    cmd = [
        "taskset", "-c", "0", sys.executable, "-m", "uvicorn", target,
        "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
        "--no-access-log", "--app-dir", app_dir,
    ]  # fmt: skip
    if target.endswith("create_app"):
        cmd.append("--factory")
    proc = subprocess.Popen(cmd, env=env)
    for _ in range(100):
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
            return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("server did not start")


def wrk(url: str, headers: dict[str, str], duration: int, connections: int) -> tuple[float, str]:
    cmd = ["taskset", "-c", "1", "wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency"]
    for name, value in headers.items():
        cmd += ["-H", f"{name}: {value}"]
    out = subprocess.run([*cmd, url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99 = re.search(r"99%\s+(\S+)", out).group(1)  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise SystemExit(f"{url}: {errors.group(1)} non-2xx responses")
    return rps, p99


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--postgres", default="", help="postgresql+asyncpg URL (else SQLite)")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("install wrk (apt-get install wrk)")
    workdir = Path(tempfile.mkdtemp(prefix="sb-bench-"))
    port, hello_port = free_port(), free_port()
    env = {
        **os.environ,
        "SWITCHBOARD_DATA_DIR": str(workdir),
        "SWITCHBOARD_PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
        "SWITCHBOARD_RUN_WORKERS": "false",
        "SWITCHBOARD_LOG_LEVEL": "WARNING",
    }
    if args.postgres:
        env["SWITCHBOARD_DATABASE_URL"] = args.postgres
    settings = Settings(
        data_dir=workdir, database_url=args.postgres, public_base_url=f"http://127.0.0.1:{port}"
    )
    workdir.mkdir(exist_ok=True)
    api_key, _ = asyncio.run(prepare(settings))
    (workdir / "hello.py").write_text(HELLO_APP)
    app = serve(env, "switchboard.app:create_app", port, str(workdir))
    hello = serve(env, "hello:app", hello_port, str(workdir))
    try:
        token = httpx.post(
            f"http://127.0.0.1:{port}/oidc.ashx/token",
            data={"grant_type": "password", "client_id": "cli", "username": "admin",
                  "password": "bench-password"},
        ).json()["access_token"]  # fmt: skip
        url = f"http://127.0.0.1:{port}/api.ashx/v1/api-keys"
        page = httpx.get(url, headers={"Authorization": f"Bearer {token}"}).json()
        assert len(page["data"]) == 50, page
        load = {"duration": args.duration, "connections": args.connections}
        rows = [
            ("bare ASGI hello", wrk(f"http://127.0.0.1:{hello_port}/", {}, **load)),
            ("list, OIDC token", wrk(url, {"Authorization": f"Bearer {token}"}, **load)),
            ("list, API key", wrk(url, {"Authorization": f"Bearer {api_key}"}, **load)),
        ]
    finally:
        app.terminate()
        hello.terminate()
        app.wait()
        hello.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    backend = "PostgreSQL" if args.postgres else "SQLite"
    print(f"backend: {backend}; {args.connections} connections; {args.duration} s each")
    print(f"{'endpoint':<20} {'req/s':>10} {'p99':>10}")
    for name, (rps, p99) in rows:
        print(f"{name:<20} {rps:>10.0f} {p99:>10}")


if __name__ == "__main__":
    main()
