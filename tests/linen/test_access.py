"""Who may call what: anonymous docs, OIDC-only Data API, roles, laundry keys, hosts."""

from __future__ import annotations

import re
import socket
import sqlite3
from pathlib import Path

import pytest
from httpx import ASGITransport, AsyncClient

from switchboard.app import create_app
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests import factories
from tests.factories import TenantFixture
from tests.linen.helpers import Portal, World

WRITES = [
    ("POST", "/v1/item-types"),
    ("PATCH", "/v1/item-types/1"),
    ("DELETE", "/v1/item-types/1"),
    ("POST", "/v1/properties"),
    ("PATCH", "/v1/properties/1"),
    ("DELETE", "/v1/properties/1"),
    ("POST", "/v1/groups"),
    ("PATCH", "/v1/groups/1"),
    ("DELETE", "/v1/groups/1"),
    ("POST", "/v1/laundries"),
    ("PATCH", "/v1/laundries/1"),
    ("DELETE", "/v1/laundries/1"),
    ("POST", "/v1/laundries/1/keys"),
    ("POST", "/v1/laundries/1/keys/1/rotate"),
    ("DELETE", "/v1/laundries/1/keys/1"),
    ("POST", "/v1/laundries/1/price-lists"),
    ("PUT", "/v1/laundries/1/price-lists/1"),
    ("DELETE", "/v1/laundries/1/price-lists/1"),
    ("POST", "/v1/sheets"),
    ("PATCH", "/v1/sheets/1"),
    ("DELETE", "/v1/sheets/1"),
    ("POST", "/v1/sheets/1/confirm"),
    ("POST", "/v1/sheets/1/cancel"),
    ("POST", "/v1/sheets/1/delivery"),
    ("POST", "/v1/invoices"),
    ("POST", "/v1/invoices/1/approve"),
    ("POST", "/v1/invoices/1/dispute"),
    ("POST", "/v1/invoices/1/pay"),
    ("POST", "/v1/vault"),
    ("PATCH", "/v1/vault/1"),
    ("DELETE", "/v1/vault/1"),
]
READS = [
    "/v1/properties",
    "/v1/properties/1",
    "/v1/groups",
    "/v1/item-types",
    "/v1/laundries",
    "/v1/laundries/1/keys",
    "/v1/laundries/1/price-lists",
    "/v1/sheets",
    "/v1/invoices",
    "/v1/vault",
    "/v1/statistics",
]


async def test_only_docs_openapi_and_version_are_anonymous(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    host = {"Host": acme.host}
    assert (await app_client.get("/api/docs", headers=host)).status_code == 200
    assert (await app_client.get("/api/openapi.json", headers=host)).status_code == 200
    version = await app_client.get("/api/version", headers=host)
    assert version.status_code == 200
    assert version.json()["database"] == "ok"
    assert version.json()["build"]
    document = (await app_client.get("/api/openapi.json")).json()
    checked = 0
    for path, item in document["paths"].items():
        for method in item:
            response = await app_client.request(
                method.upper(), "/api" + path.replace("{", "").replace("}", ""), headers=host
            )
            if path == "/version":
                continue
            checked += 1
            assert response.status_code == 401, (method, path)
    assert checked > 40


async def test_every_data_route_needs_a_bearer(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    for method, path in WRITES:
        response = await app_client.request(method, f"/api{path}", headers={"Host": acme.host})
        assert response.status_code == 401, (method, path)
        assert response.json()["error"] == "invalid_token"
    for path in READS:
        response = await app_client.get(f"/api{path}", headers={"Host": acme.host})
        assert response.status_code == 401, path


async def test_read_only_roles_get_403_on_every_write(world: World) -> None:
    portal = world.portal
    sheet = await world.sheet()
    entry = await portal.made(
        "/v1/vault", {"propertyId": world.property, "kind": "wifi", "label": "W", "secret": "s"}
    )
    document = (await portal.client.get("/api/openapi.json")).json()
    writes = [
        (method.upper(), path.replace("{entry_id}", str(entry["id"])))
        for path, item in document["paths"].items()
        for method in item
        if path.startswith("/v1/") and method != "get" and not path.endswith("/reveal")
    ]
    assert len(writes) == len(WRITES)  # the hand-written list below stays complete
    for role in ("user", "power"):
        for method, path in writes:
            concrete = re.sub(r"{\w+}", "1", path)
            response = await portal.client.request(
                method, f"/api{concrete}", json={}, headers=await portal.auth(role)
            )
            assert response.status_code == 403, (role, method, path, response.text)
            assert response.json()["error"] == "insufficient_scope"
        for path in [*READS, f"/v1/sheets/{sheet['id']}", f"/v1/vault/{entry['id']}"]:
            response = await portal.get(path, role)
            assert response.status_code == 200, (role, path, response.text)
    reveal = f"/v1/vault/{entry['id']}/reveal"
    assert (await portal.post(reveal, role="user")).status_code == 403
    assert (await portal.post(reveal, role="power")).status_code == 200
    # Nothing was changed by the refused writes.
    assert (await portal.get("/v1/item-types")).json()["total"] == 2
    assert (await portal.get(f"/v1/sheets/{sheet['id']}")).json()["status"] == "draft"


async def test_api_keys_and_laundry_keys_are_refused_on_the_data_api(
    world: World, runtime: Runtime, acme: TenantFixture
) -> None:
    api_key = await factories.api_key(runtime, acme)
    client = world.portal.client
    for token in (api_key, world.key):
        response = await client.get(
            "/api/v1/properties",
            headers={"Authorization": f"Bearer {token}", "Host": acme.host},
        )
        assert response.status_code == 401
        assert response.json()["error"] == "invalid_token"


async def test_a_token_of_another_tenant_is_refused(
    app_client: AsyncClient, portal: Portal, globex: TenantFixture
) -> None:
    token = await globex.token(app_client)
    response = await app_client.get(
        "/api/v1/properties", headers={"Authorization": f"Bearer {token}", "Host": "acme.test"}
    )
    assert response.status_code == 401
    assert "another tenant" in response.json()["error_description"]
    unknown_host = await app_client.get(
        "/api/v1/properties", headers={"Authorization": f"Bearer {token}", "Host": "nobody.test"}
    )
    assert unknown_host.status_code == 404


async def test_laundry_api_takes_only_a_live_laundry_key(world: World) -> None:
    client = world.portal.client
    host = world.portal.tenant.host
    assert (await client.get("/api/laundry/jobs", headers={"Host": host})).status_code == 401
    user_token = world.portal.as_("admin")
    assert (await client.get("/api/laundry/jobs", headers=user_token)).status_code == 401
    bogus = {"Authorization": "Bearer lk_not-a-real-key", "Host": host}
    assert (await client.get("/api/laundry/jobs", headers=bogus)).status_code == 401
    me = await client.get("/api/laundry/me", headers=world.laundry_headers())
    assert me.json() == {"id": world.laundry, "name": "Blanc Laundry"}
    # Deactivating the laundry shuts its keys out.
    await world.portal.patch(f"/v1/laundries/{world.laundry}", {"active": False})
    refused = await client.get("/api/laundry/jobs", headers=world.laundry_headers())
    assert refused.status_code == 401


async def test_openapi_document_is_complete(app_client: AsyncClient) -> None:
    document = (await app_client.get("/api/openapi.json")).json()
    assert document["openapi"].startswith("3.1")
    assert document["servers"] == [{"url": "/api", "description": "this portal"}]
    schemes = document["components"]["securitySchemes"]
    assert schemes["oidcBearer"]["scheme"] == "bearer"
    assert schemes["laundryKey"]["scheme"] == "bearer"
    schemas = document["components"]["schemas"]
    assert "HTTPValidationError" not in schemas
    assert {"ErrorBody", "SheetOut", "InvoiceMeta", "InvoiceLineIn"} <= set(schemas)
    for path, item in document["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            assert "422" not in responses, (method, path)
            if path == "/version":
                assert operation["security"] == []
                continue
            scheme = "laundryKey" if path.startswith("/laundry") else "oidcBearer"
            assert operation["security"] == [{scheme: []}], (method, path)
            error = responses["401"]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/ErrorBody"}, (method, path)
            assert operation.get("summary"), (method, path)
    upload = document["paths"]["/laundry/invoices"]["post"]["requestBody"]["content"]
    form = upload["multipart/form-data"]["schema"]["properties"]
    assert form["metadata"]["$ref"] == "#/components/schemas/InvoiceMeta"
    assert form["file"]["format"] == "binary"
    # A created item links to its operations (decision 0912), nested ones with their parent.
    links = document["paths"]["/v1/properties"]["post"]["responses"]["201"]["links"]
    assert links["getProperty"]["parameters"] == {"property_id": "$response.body#/id"}
    assert set(links) == {"getProperty", "updateProperty", "deleteProperty"}
    prices = document["paths"]["/v1/laundries/{laundry_id}/price-lists"]["post"]["responses"]
    assert prices["201"]["links"]["replacePriceList"]["parameters"] == {
        "laundry_id": "$request.path.laundry_id", "price_list_id": "$response.body#/id",
    }  # fmt: skip
    operations = {op["operationId"] for item in document["paths"].values() for op in item.values()}
    for path, item in document["paths"].items():
        for link in (
            item.get("post", {}).get("responses", {}).get("201", {}).get("links", {}).values()
        ):
            assert link["operationId"] in operations, path


async def test_version_reports_an_unreachable_database(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = Settings(
        database_url=f"postgresql+asyncpg://127.0.0.1:{port}/none",
        data_dir=tmp_path,
        secret_key="test-secret-key-with-at-least-32-characters",
        run_workers=False,
    )
    app = create_app(settings)
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://x.test") as client:
        response = await client.get("/api/version")
    assert response.status_code == 503
    assert response.json()["database"] == "unavailable"


async def test_version_answers_while_another_writer_holds_sqlite(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    """The health check reads in a read-only transaction: a writer elsewhere (another process
    holding SQLite's write lock) neither delays it nor makes it report the database down."""
    url = runtime.settings.resolved_database_url
    if not url.startswith("sqlite"):
        pytest.skip("SQLite's write lock")
    writer = sqlite3.connect(url.split("///", 1)[1], timeout=0)
    try:
        writer.execute("BEGIN IMMEDIATE")
        version = await app_client.get("/api/version", headers={"Host": acme.host})
        ready = await app_client.get("/readyz")
    finally:
        writer.rollback()
        writer.close()
    assert (version.status_code, version.json()["database"]) == (200, "ok")
    assert ready.json()["database"] == "ok"
