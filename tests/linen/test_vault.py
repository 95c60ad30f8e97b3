"""The vault: masked on read, sealed at rest, revealed by admin and power-user with an audit."""

from __future__ import annotations

from httpx import AsyncClient
from sqlalchemy import text

from switchboard.kit.clock import ManualClock
from switchboard.runtime import Runtime
from tests.factories import TenantFixture
from tests.linen.helpers import Portal, World


async def test_masked_reveal_audited_and_sealed(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    portal = world.portal
    entry = await portal.made(
        "/v1/vault",
        {"propertyId": world.property, "kind": "key-safe", "label": "Key safe", "secret": "4711"},
    )
    assert entry["secret"] == "••••••"
    for role in ("admin", "power", "user"):
        listed = (await portal.get("/v1/vault", role, propertyId=world.property)).json()
        assert [e["secret"] for e in listed["data"]] == ["••••••"]
        assert "4711" not in str(listed)
    refused = await portal.post(f"/v1/vault/{entry['id']}/reveal", role="user")
    assert (refused.status_code, refused.json()["error"]) == (403, "insufficient_scope")
    clock.advance(60)
    revealed = await portal.post(f"/v1/vault/{entry['id']}/reveal", role="power")
    assert revealed.status_code == 200
    assert revealed.json() == {
        "id": entry["id"], "secret": "4711", "revealedAt": "2026-01-01T12:01:00Z",
        "revealedBy": "power",
    }  # fmt: skip
    await portal.post(f"/v1/vault/{entry['id']}/reveal", role="admin")
    audit = (await portal.get(f"/v1/vault/{entry['id']}/reveals", "power")).json()
    assert [(a["username"], a["role"]) for a in audit["data"]] == [
        ("admin", "admin"), ("power", "power-user"),
    ]  # fmt: skip
    assert (await portal.get(f"/v1/vault/{entry['id']}/reveals", "user")).status_code == 403
    async with runtime.db.transaction() as session:
        stored = await session.scalar(text("SELECT secret_sealed FROM linen_vault_entries"))
    assert stored is not None
    assert "4711" not in stored
    assert runtime.box.open(stored) == "4711"


async def test_rotation_group_entries_and_bad_input(world: World) -> None:
    portal = world.portal
    group = await portal.made(
        "/v1/groups", {"name": "Old town", "kind": "complex", "propertyIds": [world.property]}
    )
    entry = await portal.made(
        "/v1/vault",
        {"groupId": group["id"], "kind": "wifi", "label": "Wi-Fi", "secret": "first-pass"},
    )
    assert entry["rotatedAt"] is None
    rotated = await portal.patch(f"/v1/vault/{entry['id']}", {"secret": "second-pass"})
    assert rotated.json()["rotatedAt"] is not None
    assert rotated.json()["updatedBy"] == "admin"
    shown = await portal.post(f"/v1/vault/{entry['id']}/reveal")
    assert shown.json()["secret"] == "second-pass"
    # A property's list includes the entries of its groups.
    inherited = (await portal.get("/v1/vault", propertyId=world.property)).json()
    assert [e["id"] for e in inherited["data"]] == [entry["id"]]
    bad = [
        {"kind": "wifi", "label": "x", "secret": "y"},
        {"propertyId": world.property, "groupId": group["id"], "kind": "wifi", "label": "x",
         "secret": "y"},
        {"propertyId": 999, "kind": "wifi", "label": "x", "secret": "y"},
        {"propertyId": world.property, "kind": "safe", "label": "x", "secret": "y"},
        {"propertyId": world.property, "kind": "wifi", "label": "x", "secret": ""},
    ]  # fmt: skip
    for body in bad:
        response = await portal.post("/v1/vault", body)
        assert response.status_code == 400, body
    assert (await portal.get("/v1/vault")).json()["total"] == 1
    assert (await portal.post("/v1/vault/999/reveal")).status_code == 404
    in_use = await portal.delete(f"/v1/groups/{group['id']}")
    assert (in_use.status_code, in_use.json()["error"]) == (409, "in_use")
    # A group has no active flag: the description says what can be done instead.
    hint = in_use.json()["error_description"]
    assert "Wi-Fi" in hint
    assert "delete them first" in hint
    assert "deactivate" not in hint
    still = (await portal.get(f"/v1/groups/{group['id']}")).json()
    assert still["propertyIds"] == [world.property]  # the refused delete changed nothing
    assert (await portal.delete(f"/v1/vault/{entry['id']}")).status_code == 200
    assert (await portal.delete(f"/v1/groups/{group['id']}")).status_code == 200


async def test_a_secret_is_limited_in_bytes_so_it_always_fits(world: World) -> None:
    """4000 characters of two-byte text sealed are too long for the column on PostgreSQL:
    such a secret is a 400 on create and on edit, never a 500, and changes nothing."""
    portal = world.portal
    body = {"propertyId": world.property, "kind": "wifi", "label": "Wi-Fi"}
    for chars in (4000, 2001):  # 4000 was a 500 on PostgreSQL
        refused = await portal.post("/v1/vault", {**body, "secret": "é" * chars})
        assert refused.status_code == 400, refused.text
        assert refused.json() == {
            "error": "invalid_request",
            "error_description": "secret: at most 4000 bytes in UTF-8",
        }
    assert (await portal.get("/v1/vault", "admin")).json()["total"] == 0
    entry = await portal.made("/v1/vault", {**body, "secret": "é" * 2000})
    edit = await portal.patch(f"/v1/vault/{entry['id']}", {"secret": "€" * 1400})
    assert edit.status_code == 400, edit.text
    revealed = await portal.post(f"/v1/vault/{entry['id']}/reveal")
    assert revealed.json()["secret"] == "é" * 2000


async def test_reveal_bad_input_is_a_documented_400(world: World) -> None:
    portal = world.portal
    document = (await portal.client.get("/api/openapi.json")).json()
    for path, method, url in (
        ("/v1/vault/{entry_id}/reveal", "post", "/api/v1/vault/0/reveal"),
        ("/v1/vault/{entry_id}/reveals", "get", "/api/v1/vault/1/reveals?offset=-1"),
    ):
        assert "400" in document["paths"][path][method]["responses"], path
        response = await portal.client.request(
            method.upper(), url, headers=await portal.auth("admin")
        )
        assert response.status_code == 400, response.text
        assert response.json()["error"] == "invalid_request"


async def test_the_reveal_log_outlives_its_entry(
    world: World, app_client: AsyncClient, globex: TenantFixture
) -> None:
    portal = world.portal
    entry = await portal.made(
        "/v1/vault",
        {"propertyId": world.property, "kind": "door-code", "label": "Front door", "secret": "1"},
    )
    url = f"/v1/vault/{entry['id']}"
    await portal.post(f"{url}/reveal", role="power")
    await portal.patch(url, {"label": "Main door"})
    await portal.post(f"{url}/reveal", role="admin")
    assert (await portal.delete(url)).status_code == 200
    assert (await portal.get(url)).status_code == 404
    assert (await portal.post(f"{url}/reveal")).status_code == 404
    log = await portal.get(f"{url}/reveals", "power")
    assert log.status_code == 200
    assert [(r["entryId"], r["entryLabel"], r["username"]) for r in log.json()["data"]] == [
        (entry["id"], "Main door", "admin"), (entry["id"], "Front door", "power"),
    ]  # fmt: skip
    assert (await portal.get(f"{url}/reveals", "user")).status_code == 403
    # A new entry starts with a log of its own, and another tenant sees none of it.
    fresh = await portal.made(
        "/v1/vault",
        {"propertyId": world.property, "kind": "door-code", "label": "Front door", "secret": "2"},
    )
    assert fresh["id"] != entry["id"]
    assert (await portal.get(f"/v1/vault/{fresh['id']}/reveals")).json()["total"] == 0
    other = await Portal.open(app_client, globex)
    assert (await other.get(f"{url}/reveals")).status_code == 404
    assert (await portal.get("/v1/vault/999/reveals")).status_code == 404
