"""``kit.posting.PostClient`` against real servers on loopback: servers that answer in each of
HTTP/1.1's ways (length, chunks, the end of the connection, an informational answer first), keep
or drop the connection, misbehave or stall, and speak TLS."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import uvloop

from switchboard.kit.destinations import RefusedDestination, parse_networks
from switchboard.kit.posting import DRAIN_MAX, Answer, PostClient
from tests.certs import write_self_signed

LOOPBACK = parse_networks(["127.0.0.0/8", "::1/128"])
HEADERS = {"Content-Type": "application/json", "X-Check": "yes"}


@dataclass
class Request:
    head: str
    body: bytes
    connection: int  # which accepted connection carried it


Answerer = Callable[[Request, asyncio.StreamWriter], Awaitable[bool]]
"""Writes the answer to a request; returns False to close the connection afterwards."""


@dataclass
class RawServer:
    """A loopback server reading HTTP/1.1 requests by hand and answering as told."""

    answer: Answerer
    requests: list[Request] = field(default_factory=list)
    connections: int = 0
    open: int = 0
    base: str = ""
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def until(self, predicate: Callable[[], bool]) -> None:
        async with asyncio.timeout(30):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open += 1
        number = self.connections
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("ascii")
                length = next(
                    int(line.split(":", 1)[1])
                    for line in head.split("\r\n")
                    if line.lower().startswith("content-length:")
                )
                request = Request(head, await reader.readexactly(length), number)
                self.requests.append(request)
                self.changed.set()
                if not await self.answer(request, writer):
                    break
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.open -= 1
            self.changed.set()
            writer.close()


@asynccontextmanager
async def raw_server(
    answer: Answerer, *, tls: ssl.SSLContext | None = None
) -> AsyncIterator[RawServer]:
    server = RawServer(answer)
    listener = await asyncio.start_server(server.serve, "127.0.0.1", 0, ssl=tls)
    port = listener.sockets[0].getsockname()[1]
    server.base = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    try:
        yield server
    finally:
        listener.close()
        await listener.wait_closed()


def fixed(raw: bytes, *, keep: bool = True) -> Answerer:
    async def answer(_request: Request, writer: asyncio.StreamWriter) -> bool:
        writer.write(raw)
        return keep

    return answer


@asynccontextmanager
async def client(
    seconds: float = 5.0, allow: tuple[object, ...] = LOOPBACK, keepalive: float = 15.0
) -> AsyncIterator[PostClient]:
    http = PostClient(
        allow=allow,  # type: ignore[arg-type]
        timeout=seconds,
        connect_timeout=min(seconds, 5.0),
        limit=8,
        user_agent="test/1",
        snippet=16,
        keepalive=keepalive,
    )
    try:
        yield http
    finally:
        await http.close()


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nthank"


async def test_a_post_carries_the_body_and_headers_and_reuses_its_connection() -> None:
    async with raw_server(fixed(OK)) as server, client() as http:
        for n in range(3):
            answer = await http.post(f"{server.base}/hook/{n}?a=1", b'{"n":%d}' % n, HEADERS)
            assert (answer.status, answer.head) == (200, b"thank")
    assert server.connections == 1
    first = server.requests[0]
    assert first.head.startswith("POST /hook/0?a=1 HTTP/1.1\r\n")
    lines = first.head.split("\r\n")
    assert f"Host: {server.base.removeprefix('http://')}" in lines
    assert "User-Agent: test/1" in lines
    assert "X-Check: yes" in lines
    assert "Content-Length: 7" in lines
    assert first.body == b'{"n":0}'


@pytest.mark.parametrize(
    ("raw", "status", "head"),
    [
        # chunks, the snippet cut at the client's 16 bytes
        (b"HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n"
         b"a\r\n0123456789\r\na\r\nabcdefghij\r\n0\r\n\r\n", 202, b"0123456789abcdef"),
        # an informational answer before the real one
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", 204, b""),
        # no length: the body runs to the end of the connection
        (b"HTTP/1.1 500 Oops\r\nConnection: close\r\n\r\nbroken", 500, b"broken"),
        (b"HTTP/1.0 302 Found\r\nLocation: http://127.0.0.1:1/x\r\n\r\n", 302, b""),
    ],
)  # fmt: skip
async def test_each_way_of_ending_an_answer(raw: bytes, status: int, head: bytes) -> None:
    async with raw_server(fixed(raw, keep=False)) as server, client() as http:
        answer = await http.post(f"{server.base}/", b"{}", HEADERS)
    assert (answer.status, answer.head) == (status, head)
    assert len(server.requests) == 1  # a redirect is not followed


async def test_an_answer_that_closes_is_followed_by_a_new_connection() -> None:
    closing = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    async with raw_server(fixed(closing, keep=False)) as server, client() as http:
        for _ in range(2):
            assert (await http.post(f"{server.base}/", b"{}", HEADERS)).status == 200
    assert server.connections == 2


async def test_a_kept_connection_that_fails_before_answering_is_replaced() -> None:
    """A kept-alive connection the server drops just as the next request goes out on it (the
    race every keep-alive client meets): the request goes once more on a new connection. A new
    connection that fails the same way is not retried (below)."""

    async def second_request_hangs_up(request: Request, writer: asyncio.StreamWriter) -> bool:
        if request.connection == 1 and len(server.requests) == 2:
            return False
        writer.write(OK)
        return True

    async with raw_server(second_request_hangs_up) as server, client() as http:
        first = await http.post(f"{server.base}/", b"{}", HEADERS)
        second = await http.post(f"{server.base}/", b"{}", HEADERS)
    assert (first.status, second.status) == (200, 200)
    assert [r.connection for r in server.requests] == [1, 1, 2]


async def test_idle_connections_are_kept_up_to_the_limit() -> None:
    released = asyncio.Event()

    async def held(_request: Request, writer: asyncio.StreamWriter) -> bool:
        await released.wait()
        writer.write(OK)
        return True

    async with raw_server(held) as server, client() as http:  # limit=8
        url = f"{server.base}/"
        posts = [asyncio.create_task(http.post(url, b"{}", HEADERS)) for _ in range(12)]
        await server.until(lambda: len(server.requests) == 12)
        released.set()
        assert {(await post).status for post in posts} == {200}
        await server.until(lambda: server.open <= 8)
        assert server.connections == 12
        await http.post(f"{server.base}/", b"{}", HEADERS)
        assert server.connections == 12  # a kept one served it


async def test_an_idle_connection_is_closed_after_the_keepalive() -> None:
    async with raw_server(fixed(OK)) as server, client(keepalive=0.2) as http:
        await http.post(f"{server.base}/", b"{}", HEADERS)
        assert server.open == 1  # kept
        await server.until(lambda: server.open == 0)  # closed by the client, nothing posted
        await http.post(f"{server.base}/", b"{}", HEADERS)
    assert server.connections == 2


async def test_a_long_body_closes_the_connection_instead_of_being_read() -> None:
    big = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (DRAIN_MAX * 4) + b"x" * (
        DRAIN_MAX * 4
    )
    async with raw_server(fixed(big)) as server, client() as http:
        for _ in range(2):
            answer = await http.post(f"{server.base}/", b"{}", HEADERS)
            assert (answer.status, answer.head) == (200, b"x" * 16)
    assert server.connections == 2


async def test_a_malformed_answer_is_a_value_error() -> None:
    async with raw_server(fixed(b"HTTP/1.1 2x0 What\r\n\r\n")) as server, client() as http:
        with pytest.raises(ValueError, match="malformed answer"):
            await http.post(f"{server.base}/", b"{}", HEADERS)


async def test_a_connection_closed_before_any_answer_is_an_os_error() -> None:
    async def hang_up(_request: Request, _writer: asyncio.StreamWriter) -> bool:
        return False

    async with raw_server(hang_up) as server, client() as http:
        with pytest.raises(ConnectionResetError):
            await http.post(f"{server.base}/", b"{}", HEADERS)


async def test_silence_is_a_timeout_but_a_status_already_given_stands() -> None:
    async def silent(_request: Request, _writer: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(30)
        return False

    async def stalls_in_the_body(_request: Request, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 503 Busy\r\nContent-Length: 100\r\n\r\npartial")
        await writer.drain()
        await asyncio.sleep(30)
        return False

    async with raw_server(silent) as server, client(seconds=0.3) as http:
        with pytest.raises(TimeoutError):
            await http.post(f"{server.base}/", b"{}", HEADERS)
    async with raw_server(stalls_in_the_body) as server, client(seconds=0.3) as http:
        answer = await http.post(f"{server.base}/", b"{}", HEADERS)
    assert (answer.status, answer.head) == (503, b"partial")


async def test_destinations_pass_the_guard() -> None:
    async with client(allow=()) as http:
        with pytest.raises(RefusedDestination):
            await http.post("http://127.0.0.1:9/", b"{}", HEADERS)
        with pytest.raises(RefusedDestination, match="localhost resolves to"):
            await http.post("http://localhost:9/", b"{}", HEADERS)
        with pytest.raises(RefusedDestination, match="only http and https"):
            await http.post("ftp://example.com/", b"{}", HEADERS)


async def test_a_refused_connection_is_an_os_error() -> None:
    async with client() as http:
        with pytest.raises(ConnectionRefusedError):
            await http.post("http://127.0.0.1:9/", b"{}", HEADERS)


async def test_tls_is_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = write_self_signed(tmp_path / "cert.pem", tmp_path / "key.pem")
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    async with raw_server(fixed(OK), tls=tls) as server:
        async with client() as http:
            with pytest.raises(ssl.SSLCertVerificationError):
                await http.post(f"{server.base}/", b"{}", HEADERS)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the operator's trust store
        async with client() as http:
            answer = await http.post(f"{server.base}/", b"{}", HEADERS)
    assert answer.status == 200
    assert server.requests[-1].head.startswith("POST / HTTP/1.1\r\n")


def test_the_client_runs_on_uvloop() -> None:
    """``switchboard serve`` runs the sender in uvicorn's event loop, uvloop's, whose transports
    are not asyncio's classes."""

    async def exchange() -> Answer:
        async with raw_server(fixed(OK)) as server, client() as http:
            await http.post(f"{server.base}/", b"{}", HEADERS)
            return await http.post(f"{server.base}/", b"{}", HEADERS)  # on the kept connection

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        answer = runner.run(exchange())
    assert (answer.status, answer.head) == (200, b"thank")
