"""The traffic a test host sends, run inside its network namespace by the relay tests.

``python hostclient.py <action> <host> <port> [args]`` prints one word per attempt.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
import struct
import sys

TIMEOUT = 2.0


def _client_context() -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=os.environ["RELAY_TEST_CA"])
    context.check_hostname = False
    return context


def tls(host: str, port: int) -> str:
    """A real TLS handshake: 'ok <certificate CN>', or 'refused' when the guard drops it."""
    try:
        with (
            socket.create_connection((host, port), timeout=TIMEOUT) as raw,
            _client_context().wrap_socket(raw) as conn,
        ):
            subject = dict(pair[0] for pair in conn.getpeercert()["subject"])  # type: ignore[index,misc]
            return f"ok {subject['commonName']}"
    except (OSError, ssl.SSLError):
        return "refused"


def tls_garbage(host: str, port: int) -> str:
    """A failed handshake: plain bytes where a ClientHello belongs."""
    try:
        with socket.create_connection((host, port), timeout=TIMEOUT) as raw:
            raw.sendall(b"GET / HTTP/1.0\r\n\r\n")
            return "closed" if raw.recv(1024) == b"" else "answered"
    except OSError:
        return "closed"


def tls_hold(host: str, port: int, seconds: float) -> str:
    """Open a TLS connection and keep it open; 'ok' or 'refused'."""
    import time

    try:
        with (
            socket.create_connection((host, port), timeout=TIMEOUT) as raw,
            _client_context().wrap_socket(raw),
        ):
            print("ok", flush=True)
            time.sleep(seconds)
            return "done"
    except (OSError, ssl.SSLError):
        return "refused"


def stall(host: str, port: int) -> str:
    """Connect and say nothing, so the guard's handshake times out."""
    try:
        with socket.create_connection((host, port), timeout=5) as raw:
            return "closed" if raw.recv(1024) == b"" else "answered"
    except OSError:
        return "closed"


def stun_binding(host: str, port: int) -> str:
    """An unauthenticated STUN Binding request over UDP: 'answered' or 'silent'."""
    request = struct.pack("!HHI12s", 0x0001, 0, 0x2112A442, os.urandom(12))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(0.5)
        for _ in range(2):
            sock.sendto(request, (host, port))
            try:
                data, _ = sock.recvfrom(2048)
            except TimeoutError:
                continue
            return "answered" if data[:2] == b"\x01\x01" else "other"
    return "silent"


def stun_flows(host: str, port: int, flows: int, per_flow: int) -> str:
    """``flows`` sockets (distinct source ports) each send ``per_flow`` Binding requests at once;
    the answers per socket, e.g. '1,1,0'."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(flows)]
    try:
        for sock in sockets:
            for _ in range(per_flow):
                sock.sendto(struct.pack("!HHI12s", 1, 0, 0x2112A442, os.urandom(12)), (host, port))
        answered = []
        for sock in sockets:
            sock.settimeout(0.5)
            count = 0
            try:
                while sock.recvfrom(2048):
                    count += 1
                    sock.settimeout(0.2)
            except TimeoutError:
                pass
            answered.append(str(count))
        return ",".join(answered)
    finally:
        for sock in sockets:
            sock.close()


def tcp_connect(host: str, port: int) -> str:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return "connected"
    except OSError:
        return "dropped"


async def turn_allocate(host: str, port: int, transport: str, username: str, password: str) -> str:
    """A TURN allocation with aioice's client: 'relayed <ip> <port>' or 'failed <reason>'."""
    from aioice import turn

    secure = transport == "tls"
    try:
        endpoint, _ = await asyncio.wait_for(
            turn.create_turn_endpoint(
                asyncio.DatagramProtocol, server_addr=(host, port),
                username=username, password=password,
                ssl=_client_context() if secure else None,
                transport="tcp" if secure else transport,
            ),
            5,
        )  # fmt: skip
    except Exception as exc:
        return f"failed {type(exc).__name__} {exc}"
    relayed = endpoint.get_extra_info("sockname")
    endpoint.close()
    await asyncio.sleep(0.1)
    return f"relayed {relayed[0]} {relayed[1]}"


def main() -> None:
    action, host, port, *rest = sys.argv[1:]
    count = int(os.environ.get("RELAY_TEST_COUNT", "1"))
    results = []
    for _ in range(count):
        if action == "tls":
            results.append(tls(host, int(port)))
        elif action == "tls-garbage":
            results.append(tls_garbage(host, int(port)))
        elif action == "tls-hold":
            results.append(tls_hold(host, int(port), float(rest[0])))
        elif action == "stall":
            results.append(stall(host, int(port)))
        elif action == "stun":
            results.append(stun_binding(host, int(port)))
        elif action == "stun-flows":
            results.append(stun_flows(host, int(port), int(rest[0]), int(rest[1])))
        elif action == "tcp":
            results.append(tcp_connect(host, int(port)))
        elif action == "turn":
            results.append(asyncio.run(turn_allocate(host, int(port), *rest)))
    print(json.dumps(results), flush=True)


if __name__ == "__main__":
    main()
