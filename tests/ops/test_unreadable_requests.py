"""A request ``switchboard serve`` cannot read (a header line without a colon, a Content-Length
that is no number) is answered 400 in the API's error body with ``Cache-Control: no-store``,
like every other refusal (decision 0014), not in the HTTP server's plain text."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from tests.rooms.test_serve_frames import serve

__all__ = ["serve"]

pytestmark = pytest.mark.slow


async def _raw(port: int, request: bytes) -> tuple[str, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 30)
    finally:
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return status, headers, body


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /api.ashx/v1 HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n",
        b"POST /api.ashx/v1/calls HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    ],
    ids=["header", "content-length"],
)
async def test_an_unreadable_request_gets_the_error_body(serve: int, request_bytes: bytes) -> None:
    status, headers, body = await _raw(serve, request_bytes)
    assert status.startswith("HTTP/1.1 400 ")
    assert headers["content-type"] == "application/json"
    assert headers["cache-control"] == "no-store"
    assert orjson.loads(body) == {
        "error": "invalid_request", "error_description": "the HTTP request could not be read"
    }  # fmt: skip
