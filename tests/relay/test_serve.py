"""`switchboard relay serve` as an operator runs it: a real process, stopped by SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import random
import resource
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from switchboard.kit.clock import SystemClock
from switchboard.relay.credentials import turn_credentials
from tests.ports import free_port
from tests.relay.conftest import Certificates, NetHost, needs_root

pytestmark = pytest.mark.slow


def _descriptor_limits(pid: int) -> tuple[int, int]:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError("no descriptor limit")


def _bound_in(ports: range, host: str) -> socket.socket:
    """An unconnected UDP socket on ``host`` at the first free port of ``ports``."""
    for port in ports:
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            udp.bind((host, port))
        except OSError:
            udp.close()
            continue
        return udp
    raise AssertionError(f"no free port in {ports}")


def _table_exists(name: str) -> bool:
    out = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout
    return f"table inet {name}" in out.splitlines()


async def test_serve_runs_coturn_behind_the_guard_and_cleans_up(
    sqlite_database: str, tmp_path: Path, certificates: Certificates, loopback: NetHost
) -> None:
    needs_root()
    tls_a, tls_b, turn, proxy, metrics = (free_port() for _ in range(5))
    table = f"sbr_serve_{uuid.uuid4().hex[:8]}"
    secret = uuid.uuid4().hex
    relay_port = random.randrange(40000, 59000, 100)
    env = {
        **os.environ,
        "SWITCHBOARD_RELAY_DATABASE_URL": sqlite_database,
        "SWITCHBOARD_RELAY_SECRET": secret,
        "SWITCHBOARD_RELAY_LISTENING_IPS": '["127.0.0.1"]',
        "SWITCHBOARD_RELAY_RELAY_IPS": '["127.0.0.1"]',
        "SWITCHBOARD_RELAY_BIND_HOST": "127.0.0.1",
        "SWITCHBOARD_RELAY_TLS_PORTS": json.dumps([tls_a, tls_b]),
        "SWITCHBOARD_RELAY_TURN_PORT": str(turn),
        "SWITCHBOARD_RELAY_PROXY_PORT": str(proxy),
        "SWITCHBOARD_RELAY_MIN_RELAY_PORT": str(relay_port),
        "SWITCHBOARD_RELAY_MAX_RELAY_PORT": str(relay_port + 99),
        "SWITCHBOARD_RELAY_CERT_FILE": str(certificates.cert_file),
        "SWITCHBOARD_RELAY_KEY_FILE": str(certificates.key_file),
        "SWITCHBOARD_RELAY_RUN_DIR": str(tmp_path / "run"),
        "SWITCHBOARD_RELAY_NFT_TABLE": table,
        "SWITCHBOARD_RELAY_METRICS_PORT": str(metrics),
        "SWITCHBOARD_RELAY_DENIED_PEERS": "192.0.2.0/24, 2001:db8:5::/48",
    }
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # Another service listening inside the relayed-media range: reachable through the relay.
    exposed = _bound_in(range(relay_port + 50, relay_port + 100), "0.0.0.0")
    private = _bound_in(range(relay_port + 50, relay_port + 100), "127.0.0.1")
    exposed_port, private_port = exposed.getsockname()[1], private.getsockname()[1]
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "switchboard", "relay", "serve", env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        # started as under systemd: a soft descriptor limit of 1024
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard)),
    )  # fmt: skip
    try:
        for _ in range(600):  # the process imports, starts coturn, then opens the TLS ports
            if (await loopback.run("tcp", "127.0.0.1", tls_b)) == ["connected"]:
                break
            assert process.returncode is None
            await asyncio.sleep(0.1)
        assert _table_exists(table)
        assert _descriptor_limits(process.pid) == (hard, hard)  # raised to the hard limit
        assert await loopback.run("tls", "127.0.0.1", tls_a) == ["ok relay-one"]
        user, password = turn_credentials(secret=secret, label="serve", clock=SystemClock())
        [relayed] = await loopback.run("turn", "127.0.0.1", tls_b, "tls", user, password)
        assert relayed.startswith("relayed 127.0.0.1 ")
        [relayed] = await loopback.run("turn", "127.0.0.1", turn, "tcp", user, password)
        assert relayed.startswith("relayed 127.0.0.1 ")
        async with httpx.AsyncClient(timeout=30) as client:
            body = (await client.get(f"http://127.0.0.1:{metrics}/metrics")).text
        assert "switchboard_relay_tls_accepted_total 2.0" in body
        config = (tmp_path / "run" / "turnserver.conf").stat()
        assert config.st_mode & 0o777 == 0o600
        assert (
            "denied-peer-ip=192.0.2.0-192.0.2.255\n"
            in (tmp_path / "run" / "turnserver.conf").read_text()
        )
        coturn_pid = int((tmp_path / "run" / "turnserver.pid").read_text().strip())
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), 30)
        exposed.close()
        private.close()
    assert process.returncode == 0, err.decode()
    warned = [line for line in err.decode().splitlines() if "relayed-media range" in line]
    assert len(warned) == 1, err.decode()
    assert f"UDP 0.0.0.0:{exposed_port} listen" in warned[0]
    assert f":{private_port}" not in warned[0]  # loopback: no peer reaches it
    assert not _table_exists(table)
    assert secret not in err.decode()
    assert "peers denied besides the built-in ones: 192.0.2.0/24, 2001:db8:5::/48" in err.decode()
    with pytest.raises(ProcessLookupError):
        os.kill(coturn_pid, 0)  # coturn stopped with the relay
