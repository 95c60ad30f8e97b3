"""The traffic a test host sends, run inside its network namespace by the relay tests.

``python hostclient.py <action> <host> <port> [args]`` prints one word per attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import ssl
import struct
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the checker reads it as the tests package's module
    from tests.relay.turnclient import (
        CONNECTION_BIND,
        CONNECTION_ID,
        TCP,
        Connection,
        TurnClient,
        TurnError,
    )
else:  # run as ``python hostclient.py``: turnclient.py is beside it, first on sys.path
    from turnclient import CONNECTION_BIND, CONNECTION_ID, TCP, Connection, TurnClient, TurnError

TIMEOUT = 2.0
# The address a test host sends from (one of several of its /64), or the kernel's choice.
SOURCE = os.environ.get("RELAY_TEST_SOURCE") or None


def _connect(host: str, port: int, timeout: float = TIMEOUT) -> socket.socket:
    return socket.create_connection(
        (host, port), timeout=timeout, source_address=(SOURCE, 0) if SOURCE else None
    )


def _datagram_socket(host: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
    if SOURCE:
        sock.bind((SOURCE, 0))
    return sock


def _client_context() -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=os.environ["RELAY_TEST_CA"])
    context.check_hostname = False
    return context


def tls(host: str, port: int) -> str:
    """A real TLS handshake: 'ok <certificate CN>', or 'refused' when the guard drops it."""
    try:
        with (
            _connect(host, port) as raw,
            _client_context().wrap_socket(raw) as conn,
        ):
            subject = dict(pair[0] for pair in conn.getpeercert()["subject"])  # type: ignore[index,misc]
            return f"ok {subject['commonName']}"
    except (OSError, ssl.SSLError):
        return "refused"


def tls_garbage(host: str, port: int) -> str:
    """A failed handshake: plain bytes where a ClientHello belongs."""
    try:
        with _connect(host, port) as raw:
            raw.sendall(b"GET / HTTP/1.0\r\n\r\n")
            return "closed" if raw.recv(1024) == b"" else "answered"
    except OSError:
        return "closed"


def tls_garbage_burst(host: str, port: int, connections: int) -> str:
    """``connections`` connections opened at once, then plain bytes on each: the number the
    guard closed (every one of them a failed handshake, or refused)."""
    sockets = [_connect(host, port) for _ in range(connections)]
    closed = 0
    for raw in sockets:
        with contextlib.suppress(OSError):
            raw.sendall(b"GET / HTTP/1.0\r\n\r\n")
    for raw in sockets:
        try:
            closed += raw.recv(1024) == b""
        except OSError:
            closed += 1
        raw.close()
    return str(closed)


def tls_hold(host: str, port: int, seconds: float) -> str:
    """Open a TLS connection and keep it open; 'ok' or 'refused'."""
    import time

    try:
        with (
            _connect(host, port) as raw,
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
        with _connect(host, port, 5) as raw:
            return "closed" if raw.recv(1024) == b"" else "answered"
    except OSError:
        return "closed"


def stun_binding(host: str, port: int) -> str:
    """An unauthenticated STUN Binding request over UDP: 'answered' or 'silent'."""
    request = struct.pack("!HHI12s", 0x0001, 0, 0x2112A442, os.urandom(12))
    with _datagram_socket(host) as sock:
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
    sockets = [_datagram_socket(host) for _ in range(flows)]
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
        with _connect(host, port, 0.5):
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


def turn_send(host: str, port: int, transport: str, username: str, password: str, peer: str,
              peer_port: int, family: int) -> str:  # fmt: skip
    """Allocate (address family 1: IPv4, 2: IPv6), permit ``peer`` and send it one datagram
    through the relay: 'sent <relayed ip> <relayed port>' or 'refused <STUN error code>'."""

    connection = Connection(host, port, transport, _client_context())
    client = TurnClient(connection, username, password)
    try:
        relayed = client.allocate(family=family)
        client.permit(peer)
        client.send_to(peer, peer_port, b"relayed-by-turn")
        client.permit(peer)  # one more round trip: the relay has handled the send
        return f"sent {relayed[0]} {relayed[1]}"
    except TurnError as exc:
        return f"refused {exc.code}"
    finally:
        with contextlib.suppress(TurnError, OSError):
            client.release()
        connection.close()


def udp_sink(host: str, port: int, seconds: float) -> str:
    """Listen on (host, port), say 'ready', and wait for one datagram: '<payload> from <ip>' or
    'nothing'."""
    with _datagram_socket(host) as sock:
        sock.bind((host, port))
        sock.settimeout(seconds)
        print("ready", flush=True)
        try:
            data, source = sock.recvfrom(2048)
        except TimeoutError:
            return "nothing"
        return f"{data.decode(errors='replace')} from {source[0]}"


def turn_permits(host: str, port: int, transport: str, username: str, password: str,
                 family: int, peers: list[str]) -> list[str]:  # fmt: skip
    """One allocation (family 1: IPv4, 2: IPv6) asks a permission for each peer: 'ok' or the
    STUN error code, per peer; or 'allocation refused <code>'."""

    connection = Connection(host, port, transport, _client_context())
    client = TurnClient(connection, username, password)
    answers = []
    try:
        try:
            client.allocate(family=family)
        except TurnError as exc:
            return [f"allocation refused {exc.code}"]
        for peer in peers:
            try:
                client.permit(peer)
                answers.append("ok")
            except TurnError as exc:
                answers.append(str(exc.code))
        return answers
    finally:
        with contextlib.suppress(TurnError, OSError):
            client.release()
        connection.close()


def turn_pair(host: str, port: int, transport: str, username: str, password: str) -> str:
    """Two allocations on the relay, the second reached from the first through the relay's own
    address (two peers that both need the relay): 'delivered' or 'lost'."""

    first, second = (TurnClient(Connection(host, port, transport, _client_context()),
                                username, password) for _ in range(2))  # fmt: skip
    try:
        one, two = first.allocate(), second.allocate()
        second.permit(one[0])
        first.permit(two[0])
        first.send_to(*two, b"peer-to-peer")
        try:
            return "delivered" if second.receive_data() == b"peer-to-peer" else "garbled"
        except TimeoutError:
            return "lost"
    finally:
        for client in (first, second):
            with contextlib.suppress(Exception):
                client.release()
            client.connection.close()


def turn_tcp(host: str, port: int, transport: str, username: str, password: str, peer: str,
             peer_port: int) -> str:  # fmt: skip
    """An RFC 6062 TCP allocation that connects to ``peer`` and writes one line there:
    'connected', or 'refused <STUN error code>'."""

    control = Connection(host, port, transport, _client_context())
    client = TurnClient(control, username, password)
    try:
        client.allocate(transport=TCP)
        connection_id = client.connect(peer, peer_port)
        data = Connection(host, port, transport, _client_context())
        bound = TurnClient(data, username, password)
        bound.realm, bound.nonce, bound.key = client.realm, client.nonce, client.key
        bound.request(CONNECTION_BIND, lambda _: [(CONNECTION_ID, connection_id)])
        data.sock.sendall(b"relayed-by-turn\n")
        data.close()
        return "connected"
    except TurnError as exc:
        return f"refused {exc.code}"
    finally:
        control.close()


def main() -> None:
    action, host, port, *rest = sys.argv[1:]
    count = int(os.environ.get("RELAY_TEST_COUNT", "1"))
    results = []
    for _ in range(count):
        if action == "tls":
            results.append(tls(host, int(port)))
        elif action == "tls-garbage":
            results.append(tls_garbage(host, int(port)))
        elif action == "tls-garbage-burst":
            results.append(tls_garbage_burst(host, int(port), int(rest[0])))
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
        elif action == "turn-send":
            transport, username, password, peer, peer_port, family = rest
            results.append(turn_send(host, int(port), transport, username, password, peer,
                                     int(peer_port), int(family)))  # fmt: skip
        elif action == "udp-sink":
            results.append(udp_sink(host, int(port), float(rest[0])))
        elif action == "turn-permits":
            transport, username, password, family = rest[:4]
            results.extend(turn_permits(host, int(port), transport, username, password,
                                        int(family), rest[4:]))  # fmt: skip
        elif action == "turn-pair":
            results.append(turn_pair(host, int(port), *rest))
        elif action == "turn-tcp":
            transport, username, password, peer, peer_port = rest
            results.append(turn_tcp(host, int(port), transport, username, password, peer,
                                    int(peer_port)))  # fmt: skip
    print(json.dumps(results), flush=True)


if __name__ == "__main__":
    main()
