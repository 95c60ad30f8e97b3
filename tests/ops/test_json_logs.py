"""``SWITCHBOARD_LOG_FORMAT=json``: one JSON object per line, access fields included, secrets
redacted."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from httpx import ASGITransport, AsyncClient
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from switchboard.app import create_app
from switchboard.kit.logging import JsonFormatter, configure_logging
from switchboard.runtime import Runtime
from switchboard.settings import Settings


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


async def test_access_lines_are_json_objects(
    app_client: AsyncClient, json_lines: io.StringIO
) -> None:
    token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"
    await app_client.get(
        "/api.ashx/v1/calls/c-123?apiKey=sk-very-secret",
        headers={"Authorization": f"Bearer {token}", "X-Request-Id": "trace-1"},
    )
    logging.getLogger("switchboard.test").warning("password=hunter2 and %s", token)
    lines = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    access = [line for line in lines if line["logger"] == "switchboard.access"]
    assert len(access) == 1
    entry = access[0]
    assert entry["method"] == "GET"
    assert entry["route"] == "/api.ashx/v1/calls/{call_id}"
    assert entry["status"] == 401
    assert entry["request_id"] == "trace-1"
    assert isinstance(entry["duration_ms"], float)
    assert {"time", "level", "message"} <= entry.keys()
    text = json.dumps([line for line in lines if line["logger"] != "httpx"])  # the client's
    for secret in ("sk-very-secret", "c-123", "hunter2", token):
        assert secret not in text
    warning = next(line for line in lines if line["logger"] == "switchboard.test")
    assert warning["level"] == "WARNING"
    assert "[redacted]" in warning["message"]


def test_the_setting_selects_the_json_formatter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_LOG_FORMAT", "json")
    settings = Settings()
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging(settings.log_level, settings.log_format)
        assert isinstance(root.handlers[0].formatter, JsonFormatter)
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
    monkeypatch.setenv("SWITCHBOARD_LOG_FORMAT", "xml")
    with pytest.raises(ValueError, match="log_format"):
        Settings()


async def test_an_unhandled_error_is_a_logged_500_with_its_request_id(
    runtime: Runtime, json_lines: io.StringIO
) -> None:
    """The access log is outside the error middleware: the 500 it sends carries the id."""

    async def broken(_request: Request) -> Response:
        raise RuntimeError("a bug")

    app = create_app(runtime=runtime)
    app.router.routes.insert(0, Route("/broken", broken))
    transport = ASGITransport(app=app, raise_app_exceptions=False)
    async with AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.get("/broken", headers={"X-Request-Id": "trace-500"})
    assert response.status_code == 500
    assert response.headers["x-request-id"] == "trace-500"
    lines = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    access = [line for line in lines if line["logger"] == "switchboard.access"]
    assert [(line["status"], line["request_id"], line["route"]) for line in access] == [
        (500, "trace-500", "/broken")
    ]
