"""Every endpoint of both APIs refuses a body above its limit with 413 before reading past it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from httpx import AsyncClient

from switchboard.settings import Settings
from tests.factories import TenantFixture
from tests.linen.helpers import make_pdf

LIMIT = 1024 * 1024  # the default of SWITCHBOARD_MAX_BODY_BYTES


def test_the_default_limit_is_one_mebibyte(settings: Settings) -> None:
    assert settings.max_body_bytes == LIMIT


def big_property() -> bytes:
    return json.dumps(
        {"code": "BIG", "name": "x" * (2 * LIMIT), "address": {"street": "Quay 1"}}
    ).encode()


async def test_a_declared_body_above_the_limit_is_413_and_creates_nothing(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    headers = {**await acme.auth(app_client), "Content-Type": "application/json"}
    response = await app_client.post("/api/v1/properties", content=big_property(), headers=headers)
    assert response.status_code == 413
    assert response.json()["error"] == "payload_too_large"
    assert str(LIMIT) in response.json()["error_description"]
    listed = await app_client.get("/api/v1/properties", headers=headers)
    assert listed.status_code == 200
    assert listed.json()["total"] == 0


async def test_a_streamed_body_is_cut_at_the_limit(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    """Chunked, without Content-Length: the server stops reading at the limit."""
    sent = 0
    chunk = b"x" * 64 * 1024

    async def endless() -> AsyncIterator[bytes]:
        nonlocal sent
        yield b'{"name": "'
        for _ in range(10_000):  # 640 MiB if it were all read
            sent += len(chunk)
            yield chunk

    headers = {**await acme.auth(app_client), "Content-Type": "application/json"}
    response = await app_client.post("/api.ashx/v1/api-keys", content=endless(), headers=headers)
    assert response.status_code == 413
    assert response.json()["error"] == "payload_too_large"
    assert sent <= LIMIT + len(chunk)
    listed = await app_client.get("/api.ashx/v1/api-keys", headers=headers)
    assert listed.json()["total"] == 0


async def test_a_body_under_the_limit_still_works(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    headers = {**await acme.auth(app_client), "Content-Type": "application/json"}
    body = b'{"name": "ci"' + b" " * (LIMIT - 100) + b"}"
    response = await app_client.post("/api.ashx/v1/api-keys", content=body, headers=headers)
    assert response.status_code == 201, response.text


async def test_the_invoice_upload_keeps_its_larger_limit(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    """A 2 MiB multipart upload reaches the handler (refused there for its metadata, not 413)."""
    pdf = make_pdf().replace(b"%%EOF", b"%" + b"x" * (2 * LIMIT) + b"\n%%EOF")
    response = await app_client.post(
        "/api/v1/invoices",
        files={
            "file": ("inv.pdf", pdf, "application/pdf"),
            "metadata": (None, "{}", "application/json"),
        },
        headers={**await acme.auth(app_client), "Host": acme.host},
    )
    assert response.status_code == 400, response.text
    over = await app_client.post(
        "/api/v1/invoices",
        content=b"x" * (11 * LIMIT),
        headers={**await acme.auth(app_client), "Content-Type": "multipart/form-data; boundary=b"},
    )
    assert over.status_code == 413
