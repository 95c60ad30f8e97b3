"""Transcript share links over HTTP: REST, the public page and the share.* events."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

import pytest
from httpx import ASGITransport, AsyncClient
from sqlalchemy import select

from switchboard.app import create_app
from switchboard.kit.clock import ManualClock
from switchboard.kit.crypto import sha256_hex
from switchboard.platform.events.models import Event
from switchboard.platform.shares.models import TranscriptShare
from switchboard.platform.transcripts.service import Turn
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests.factories import TenantFixture
from tests.transcripts.helpers import T0, outbound, save

CALL = "oac-5ba4e0000001"
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


async def _events(runtime: Runtime, prefix: str = "share.") -> list[tuple[str, dict[str, Any]]]:
    async with runtime.db.transaction() as session:
        rows = (await session.execute(select(Event).order_by(Event.id))).scalars()
        return [(row.name, row.payload) for row in rows if row.name.startswith(prefix)]


@pytest.fixture
async def file(runtime: Runtime, acme: TenantFixture) -> str:
    turns = [
        Turn("AI", "Hello, this is Acme.", T0),
        Turn("Caller", HOSTILE, T0 + dt.timedelta(seconds=5)),
    ]
    return await save(runtime, acme, outbound(CALL, turns=turns))


async def _create(
    client: AsyncClient, acme: TenantFixture, ttl: object = 24
) -> tuple[int, dict[str, Any]]:
    response = await client.post(
        f"/api.ashx/v1/transcripts/{CALL}/shares",
        json={"ttlHours": ttl},
        headers=await acme.auth(client),
    )
    return response.status_code, response.json()


async def test_create_list_open_revoke(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime, file: str, clock: ManualClock
) -> None:
    status, share = await _create(app_client, acme)
    assert status == 201
    token = share["token"]
    assert len(base64.urlsafe_b64decode(token + "=")) == 32  # 256 random bits
    assert share["url"] == f"http://acme.test/share/{token}"
    assert share["tokenHint"] == "\u2026" + token[-8:]
    assert share["expiresUtc"] == "2026-01-02T12:00:00Z"
    assert (share["ttlHours"], share["createdBy"], share["file"]) == (24, "admin", file)
    async with runtime.db.transaction() as session:
        stored = (await session.execute(select(TranscriptShare))).scalar_one()
        assert stored.token_hash == sha256_hex(token)
        assert token not in {stored.token_tail, stored.id, stored.token_hash}
    assert await _events(runtime) == [
        (
            "share.created",
            {
                "token": "\u2026" + token[-8:],
                "file": file,
                "ttlHours": 24,
                "createdBy": "admin",
                "expiresUtc": "2026-01-02T12:00:00Z",
            },
        )
    ]

    listed = await app_client.get(
        f"/api.ashx/v1/transcripts/{CALL}/shares", headers=await acme.auth(app_client)
    )
    assert listed.status_code == 200
    body = listed.json()
    assert (body["total"], body["limit"], body["offset"], body["next"]) == (1, 50, 0, None)
    assert token not in listed.text
    assert "token" not in body["data"][0]
    assert body["data"][0]["views"] == 0

    # A fresh client without any cookie or bearer opens the page.
    async with AsyncClient(
        transport=ASGITransport(app=create_app(runtime=runtime)), base_url="http://acme.test"
    ) as stranger:
        page = await stranger.get(f"/share/{token}")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert page.headers["referrer-policy"] == "no-referrer"
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert "script" not in page.headers["content-security-policy"]
        assert "Hello, this is Acme." in page.text
        assert "<script>" not in page.text
        assert "<img" not in page.text
        assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page.text
        css = await stranger.get("/share/assets/share.css")
        assert css.headers["content-type"].startswith("text/css")

        as_json = await stranger.get(f"/share/{token}", headers={"Accept": "application/json"})
        assert as_json.status_code == 200
        shared = as_json.json()
        assert shared["callId"] == CALL
        assert shared["turns"][1] == {
            "speaker": "Caller",
            "text": HOSTILE,
            "ts": "2026-01-01T09:00:05Z",
        }
        assert "email" not in shared
        assert "requestedBy" not in shared
        # A HEAD (a link checker, a chat preview) is answered like the page but is no view.
        probed = await stranger.head(f"/share/{token}")
        assert (probed.status_code, probed.content) == (200, b"")
        assert probed.headers["content-type"].startswith("text/html")

    viewed = [payload for name, payload in await _events(runtime) if name == "share.viewed"]
    assert viewed == [{"token": "\u2026" + token[-8:], "file": file, "viewerIp": "127.0.0.1"}] * 2
    listed = await app_client.get(
        f"/api.ashx/v1/transcripts/{CALL}/shares", headers=await acme.auth(app_client)
    )
    assert listed.json()["data"][0]["views"] == 2
    assert listed.json()["data"][0]["lastViewedUtc"] == "2026-01-01T12:00:00Z"

    revoked = await app_client.delete(
        f"/api.ashx/v1/shares/{share['id']}", headers=await acme.auth(app_client)
    )
    assert revoked.status_code == 200
    assert revoked.json()["revokedBy"] == "admin"
    assert (await _events(runtime))[-1] == (
        "share.revoked",
        {"token": "\u2026" + token[-8:], "file": file, "revokedBy": "admin"},
    )
    gone = await app_client.get(f"/share/{token}")
    assert gone.status_code == 404
    assert "does not work" in gone.text
    gone_json = await app_client.get(f"/share/{token}", headers={"Accept": "application/json"})
    assert (gone_json.status_code, gone_json.json()["error"]) == (404, "not_found")
    again = await app_client.delete(
        f"/api.ashx/v1/shares/{share['id']}", headers=await acme.auth(app_client)
    )
    assert again.status_code == 404
    listed = await app_client.get(
        f"/api.ashx/v1/transcripts/{CALL}/shares", headers=await acme.auth(app_client)
    )
    assert listed.json()["total"] == 0
    # Opening a revoked share emits nothing.
    assert [name for name, _ in await _events(runtime)].count("share.viewed") == 2


async def test_expiry_and_never(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime, file: str, clock: ManualClock
) -> None:
    _, hour = await _create(app_client, acme, ttl=1)
    _, never = await _create(app_client, acme, ttl=0)
    assert never["expiresUtc"] is None
    assert (await _events(runtime))[1][1]["expiresUtc"] is None
    clock.advance(3599)
    assert (await app_client.get(f"/share/{hour['token']}")).status_code == 200
    clock.advance(1)
    assert (await app_client.get(f"/share/{hour['token']}")).status_code == 404
    clock.advance(10 * 365 * 86400)
    assert (await app_client.get(f"/share/{never['token']}")).status_code == 200
    listed = await app_client.get(
        f"/api.ashx/v1/transcripts/{CALL}/shares", headers=await acme.auth(app_client)
    )
    expired = {item["id"]: item["expired"] for item in listed.json()["data"]}
    assert expired == {hour["id"]: True, never["id"]: False}


@pytest.mark.parametrize("ttl", [-1, 8761, "ten", None, 1.5])
async def test_bad_ttl_is_400_and_creates_nothing(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime, file: str, ttl: object
) -> None:
    status, body = await _create(app_client, acme, ttl=ttl)
    assert status == 400
    assert set(body) == {"error", "error_description"}
    assert "ttlHours" in body["error_description"]
    assert await _events(runtime) == []


async def test_unknown_call_role_and_token(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime, file: str
) -> None:
    missing = await app_client.post(
        "/api.ashx/v1/transcripts/oac-nope/shares",
        json={"ttlHours": 1},
        headers=await acme.auth(app_client),
    )
    assert (missing.status_code, missing.json()["error"]) == (404, "not_found")
    user = await app_client.post(
        f"/api.ashx/v1/transcripts/{CALL}/shares",
        json={"ttlHours": 1},
        headers=await acme.auth(app_client, "user"),
    )
    assert user.status_code == 403
    anonymous = await app_client.get(f"/api.ashx/v1/transcripts/{CALL}/shares")
    assert anonymous.status_code == 401
    for token in ("short", "A" * 43, "x" * 500):
        assert (await app_client.get(f"/share/{token}")).status_code == 404
    assert await _events(runtime) == []


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Loopback and 10/8 are the deployment's reverse proxies (for every test of this file)."""
    return settings.model_copy(update={"trusted_proxies": ("127.0.0.0/8", "10.0.0.0/8")})


async def test_viewer_ip_trusts_only_listed_proxies(
    app_client: AsyncClient, acme: TenantFixture, runtime: Runtime, file: str
) -> None:
    _, share = await _create(app_client, acme)
    url = f"/share/{share['token']}"
    # The peer (127.0.0.1) is a listed proxy: the right-most untrusted hop is the viewer; what
    # the client wrote further left is not believed.
    await app_client.get(url, headers={"X-Forwarded-For": "6.6.6.6, 203.0.113.9, 10.1.2.3"})
    await app_client.get(url, headers={"X-Forwarded-For": "not-an-ip"})
    await app_client.get(url)
    # A peer that is no listed proxy cannot claim another address.
    direct = ASGITransport(app=create_app(runtime=runtime), client=("198.51.100.7", 40000))
    async with AsyncClient(transport=direct, base_url="http://acme.test") as outsider:
        await outsider.get(url, headers={"X-Forwarded-For": "203.0.113.50"})
    ips = [p["viewerIp"] for n, p in await _events(runtime) if n == "share.viewed"]
    assert ips == ["203.0.113.9", "127.0.0.1", "127.0.0.1", "198.51.100.7"]
