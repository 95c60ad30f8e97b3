"""Authenticated list endpoint and the API catalogue vs a bare ASGI hello, on one server core.

Both apps are served by uvicorn pinned to CPU 0; wrk (Debian package ``wrk``) drives them from
CPU 1 over loopback. The list is ``GET /api.ashx/v1/calls?limit=50`` (a full page of 50 of 60
calls, with the total), called
with an OIDC access token (verified once, then served from the verified-token cache) and with an
API key. The runs alternate: hello, subject, hello, subject...; each subject's ratio is taken
against the mean of the hello runs just before and after it, so the machine's load cancels,
and the figure kept is the median over ``--rounds`` such sequences. Repeated list requests are
answered by the read cache (decision 0960); ``SWITCHBOARD_READ_CACHE_ENTRIES=0`` in the
environment measures the application's own path instead. Any failed request fails the bench
(bench/report.py).

    .venv/bin/python bench/bench_api.py [--duration 10] [--connections 16] [--rounds 3]
        [--postgres SERVER_URL]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from sqlalchemy import insert

from report import check, interleaved, median_shares, print_compared, record, scratch_postgres
from seed import CallRows
from switchboard.identity import clients
from switchboard.identity import service as identity
from switchboard.kit.models import Base
from switchboard.platform.calls.models import Call
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.tenants import service as tenants

CALLS = 60

HELLO_APP = """
import pathlib

SAME_BYTES = pathlib.Path(__file__).with_name("catalogue.json").read_bytes()
SAME_HEADERS = [(b"content-type", b"application/json"),
                (b"content-length", str(len(SAME_BYTES)).encode()),
                (b"cache-control", b"no-store")]


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    if scope["path"] == "/same-bytes":  # the catalogue's bytes and headers, nothing else
        await send({"type": "http.response.start", "status": 200, "headers": SAME_HEADERS})
        await send({"type": "http.response.body", "body": SAME_BYTES})
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
        await clients.create_client(session, tenant=tenant, client_id="cli", clock=runtime.clock)
        _, key = await identity.create_api_key(
            session, tenant_id=tenant.id, user=user, name="bench", clock=runtime.clock
        )
        # More calls than a page, so the list serves a full page of 50 and counts the rest.
        now = dt.datetime.now(dt.UTC)
        rows = CallRows(runtime, tenant.id)
        await session.execute(insert(Call), [
            rows.row(f"oac-{i:012x}", now + dt.timedelta(days=1, minutes=i), now)
            for i in range(CALLS)
        ])  # fmt: skip
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
    for _ in range(300):  # a loaded machine can take half a minute to start the application
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
            return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("server did not start")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians kept")
    parser.add_argument("--postgres", default="", help="postgresql+asyncpg URL (else SQLite)")
    args = parser.parse_args()
    if not args.postgres:
        run(args)
        return
    with scratch_postgres(args.postgres) as url:  # never the tables of a shared database
        args.postgres = url
        run(args)


def run(args: argparse.Namespace) -> None:
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
    (workdir / "catalogue.json").write_bytes(
        httpx.get(f"http://127.0.0.1:{port}/api.ashx/v1").content
    )
    hello = serve(env, "hello:app", hello_port, str(workdir))
    try:
        token = httpx.post(
            f"http://127.0.0.1:{port}/oidc.ashx/token",
            data={"grant_type": "password", "client_id": "cli", "username": "admin",
                  "password": "bench-password"},
        ).json()["access_token"]  # fmt: skip
        url = f"http://127.0.0.1:{port}/api.ashx/v1/calls?limit=50"
        page = httpx.get(url, headers={"Authorization": f"Bearer {api_key}"}).json()
        check(len(page["data"]) == 50 and page["total"] == CALLS, f"the list answered {page}")
        catalogue = f"http://127.0.0.1:{port}/api.ashx/v1"
        oidc = {"Authorization": f"Bearer {token}"}
        key = {"Authorization": f"Bearer {api_key}"}
        for headers in (oidc, key):
            page = httpx.get(url, headers=headers)
            check(page.status_code == 200, f"list: {page.status_code} {page.text}")
            check(len(page.json()["data"]) == 50, f"list: not 50 items: {page.text[:200]}")
        check(httpx.get(catalogue).status_code == 200, "catalogue did not answer 200")
        load = {"duration": args.duration, "connections": args.connections}
        subjects = [
            ("catalogue", catalogue, {}),
            # Not a goal: how much of the catalogue's gap is its 8 KB rather than the stack.
            ("same-bytes", f"http://127.0.0.1:{hello_port}/same-bytes", {}),
            ("list.oidc", url, oidc),
            ("list.key", url, key),
        ]
        hello_url = f"http://127.0.0.1:{hello_port}/"
        warmup = min(2, args.duration)  # before the first round only
        rounds = [
            interleaved(hello_url, subjects, warmup=0 if n else warmup, **load)
            for n in range(args.rounds)
        ]
    finally:
        app.terminate()
        hello.terminate()
        app.wait()
        hello.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    backend = "PostgreSQL" if args.postgres else "SQLite"
    print(f"backend: {backend}; {args.connections} connections; {args.duration} s each")
    for number, compared in enumerate(rounds, 1):
        print(f"round {number}")
        print_compared(compared)
    for name, share in median_shares(rounds).items():
        print(f"{name}: median {share:.1f} % of the bare hello over {len(rounds)} rounds")
        if name != "same-bytes":
            record(f"api.{name}.{backend.lower()}", share)


if __name__ == "__main__":
    main()
