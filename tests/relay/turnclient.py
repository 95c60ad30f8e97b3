"""A small TURN client (RFC 8656, RFC 6062) for the relay tests' test hosts.

aioice allocates UDP relays only and hides permissions; the attacks of test_relay_peers.py need
TCP allocations, the IPv6 address family, and permissions and sends to chosen peers, so this
client speaks the wire format itself. Standard library only: hostclient.py runs it inside a
network namespace.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import socket
import ssl
import struct
from collections.abc import Callable

COOKIE = 0x2112A442
# Methods (RFC 8656, RFC 6062) and classes.
ALLOCATE, REFRESH, SEND, DATA, CREATE_PERMISSION = 0x3, 0x4, 0x6, 0x7, 0x8
CONNECT, CONNECTION_BIND = 0xA, 0xB
REQUEST, INDICATION, SUCCESS, ERROR = 0, 1, 2, 3
# Attributes.
USERNAME, INTEGRITY, ERROR_CODE, LIFETIME = 0x0006, 0x0008, 0x0009, 0x000D
PEER, DATA_ATTR, REALM, NONCE, RELAYED = 0x0012, 0x0013, 0x0014, 0x0015, 0x0016
FAMILY, TRANSPORT, CONNECTION_ID = 0x0017, 0x0019, 0x002A
UDP, TCP = 17, 6
TIMEOUT = 2.0


class TurnError(Exception):
    def __init__(self, code: int, reason: str) -> None:
        super().__init__(f"{code} {reason}")
        self.code = code


def _message_type(method: int, klass: int) -> int:
    return (
        (method & 0x000F)
        | ((method & 0x0070) << 1)
        | ((method & 0x0F80) << 2)
        | ((klass & 1) << 4)
        | ((klass & 2) << 7)
    )


def _attribute(kind: int, value: bytes) -> bytes:
    return struct.pack("!HH", kind, len(value)) + value + b"\x00" * (-len(value) % 4)


def xor_address(address: str, port: int, tid: bytes) -> bytes:
    ip = ipaddress.ip_address(address)
    mask = struct.pack("!I", COOKIE) + (tid if ip.version == 6 else b"")
    packed = bytes(a ^ b for a, b in zip(ip.packed, mask, strict=False))
    return struct.pack("!BBH", 0, 1 if ip.version == 4 else 2, port ^ (COOKIE >> 16)) + packed


def _unxor_address(value: bytes, tid: bytes) -> tuple[str, int]:
    family, port = value[1], struct.unpack("!H", value[2:4])[0] ^ (COOKIE >> 16)
    mask = struct.pack("!I", COOKIE) + (tid if family == 2 else b"")
    packed = bytes(a ^ b for a, b in zip(value[4:], mask, strict=False))
    return str(ipaddress.ip_address(packed)), port


Attributes = list[tuple[int, bytes]]


def encode(method: int, klass: int, attrs: Attributes, tid: bytes, key: bytes | None) -> bytes:
    body = b"".join(_attribute(kind, value) for kind, value in attrs)
    if key is None:
        return struct.pack("!HHI", _message_type(method, klass), len(body), COOKIE) + tid + body
    header = struct.pack("!HHI", _message_type(method, klass), len(body) + 24, COOKIE) + tid
    digest = hmac.new(key, header + body, hashlib.sha1).digest()
    return header + body + _attribute(INTEGRITY, digest)


def decode(data: bytes) -> tuple[int, bytes, dict[int, bytes]]:
    """(message type, transaction id, attributes) of one STUN message."""
    kind, length = struct.unpack("!HH", data[:4])
    tid, offset = data[8:20], 20
    attrs: dict[int, bytes] = {}
    while offset < 20 + length:
        attr, size = struct.unpack("!HH", data[offset : offset + 4])
        attrs.setdefault(attr, data[offset + 4 : offset + 4 + size])
        offset += 4 + size + (-size % 4)
    return kind, tid, attrs


class Connection:
    """One control (or data) connection to the relay over UDP, TCP or TLS."""

    def __init__(
        self, host: str, port: int, transport: str, context: ssl.SSLContext | None
    ) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.server = (host, port)
        if transport == "udp":
            self.sock = socket.socket(family, socket.SOCK_DGRAM)
        else:
            self.sock = socket.create_connection((host, port), timeout=TIMEOUT)
            if transport == "tls":
                assert context is not None
                self.sock = context.wrap_socket(self.sock)
        self.sock.settimeout(TIMEOUT)
        self.stream = transport != "udp"

    def send(self, data: bytes) -> None:
        if self.stream:
            self.sock.sendall(data)
        else:
            self.sock.sendto(data, self.server)

    def receive(self) -> bytes:
        if not self.stream:
            return self.sock.recv(65536)
        header = self._exactly(20)
        return header + self._exactly(struct.unpack("!H", header[2:4])[0])

    def _exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("closed by the relay")
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


AttrsFor = Callable[[bytes], Attributes]


class TurnClient:
    """An authenticated TURN session: ``allocate`` first, then permissions, sends, connects."""

    def __init__(self, connection: Connection, username: str, password: str) -> None:
        self.connection = connection
        self.username, self.password = username, password
        self.realm = self.nonce = b""
        self.key: bytes | None = None

    def request(self, method: int, attrs_for: AttrsFor) -> tuple[bytes, dict[int, bytes]]:
        """Send a request (authenticating on a 401 or a stale nonce); (tid, attributes) of the
        success answer, or TurnError. ``attrs_for`` builds the attributes for a transaction id,
        since XOR-encoded addresses depend on it."""
        for _ in range(3):
            tid = os.urandom(12)
            attrs = attrs_for(tid)
            if self.key is not None:
                attrs = [(USERNAME, self.username.encode()), (REALM, self.realm),
                         (NONCE, self.nonce), *attrs]  # fmt: skip
            self.connection.send(encode(method, REQUEST, attrs, tid, self.key))
            kind, answer = self._answer(tid)
            if kind == _message_type(method, SUCCESS):
                return tid, answer
            error = answer.get(ERROR_CODE, b"\x00\x00\x05\x00?")
            code, reason = error[2] * 100 + error[3], error[4:].decode(errors="replace")
            retry = code in (401, 438) and REALM in answer and NONCE in answer
            if retry and not (code == 401 and self.key is not None):
                self.realm, self.nonce = answer[REALM], answer[NONCE]
                credential = f"{self.username}:{self.realm.decode()}:{self.password}"
                self.key = hashlib.md5(credential.encode()).digest()  # noqa: S324 (RFC 8489)
                continue
            raise TurnError(code, reason)
        raise TurnError(401, "no usable nonce")

    def _answer(self, tid: bytes) -> tuple[int, dict[int, bytes]]:
        while True:
            kind, got, attrs = decode(self.connection.receive())
            if got == tid:
                return kind, attrs

    def allocate(self, *, transport: int = UDP, family: int = 1) -> tuple[str, int]:
        """The relayed address of a new allocation (family 1: IPv4, 2: IPv6)."""
        attrs = [(TRANSPORT, struct.pack("!B3x", transport)), (LIFETIME, struct.pack("!I", 600))]
        if family != 1:
            attrs.append((FAMILY, struct.pack("!B3x", family)))
        tid, answer = self.request(ALLOCATE, lambda _: attrs)
        return _unxor_address(answer[RELAYED], tid)

    def release(self) -> None:
        """Refresh with a lifetime of 0: the allocation ends (a UDP one would otherwise stay)."""
        if self.key is not None:
            self.request(REFRESH, lambda _: [(LIFETIME, struct.pack("!I", 0))])

    def permit(self, peer: str) -> None:
        self.request(CREATE_PERMISSION, lambda tid: [(PEER, xor_address(peer, 0, tid))])

    def send_to(self, peer: str, port: int, payload: bytes) -> None:
        tid = os.urandom(12)
        attrs = [(PEER, xor_address(peer, port, tid)), (DATA_ATTR, payload)]
        self.connection.send(encode(SEND, INDICATION, attrs, tid, None))

    def connect(self, peer: str, port: int) -> bytes:
        """RFC 6062 Connect on a TCP allocation: the CONNECTION-ID."""
        _, answer = self.request(CONNECT, lambda tid: [(PEER, xor_address(peer, port, tid))])
        return answer[CONNECTION_ID]

    def receive_data(self) -> bytes:
        """The payload of the next Data indication."""
        while True:
            kind, _, attrs = decode(self.connection.receive())
            if kind == _message_type(DATA, INDICATION):
                return attrs[DATA_ATTR]
