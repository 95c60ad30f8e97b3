"""Both OpenAPI documents give every operation a short, stable, unique camelCase operationId;
the identity provider's operations are tagged and PDF downloads are described as binary."""

from __future__ import annotations

import re
from typing import Any

from httpx import AsyncClient

CAMEL = re.compile(r"^[a-z][a-zA-Z]{2,39}$")
METHODS = ("get", "post", "put", "patch", "delete")


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, item[method])
        for path, item in document["paths"].items()
        for method in METHODS
        if method in item
    ]


async def test_every_operation_has_a_short_unique_id(app_client: AsyncClient) -> None:
    for url in ("/openapi.json", "/api/openapi.json"):
        document = (await app_client.get(url)).json()
        ids = [op.get("operationId", "") for _, _, op in operations(document)]
        assert all(CAMEL.match(i) for i in ids), [i for i in ids if not CAMEL.match(i)]
        assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    platform = {
        (m, p): op["operationId"]
        for m, p, op in operations((await app_client.get("/openapi.json")).json())
    }
    assert platform[("post", "/api.ashx/v1/calls")] == "createCall"
    assert platform[("get", "/api.ashx/v1/calls")] == "listCalls"
    assert platform[("post", "/api.ashx/v1/calls/{call_id}/hangup")] == "hangupCall"
    assert platform[("post", "/oidc.ashx/token")] == "requestToken"


async def test_oidc_operations_are_tagged_and_pdfs_are_binary(app_client: AsyncClient) -> None:
    platform = (await app_client.get("/openapi.json")).json()
    for method, path, op in operations(platform):
        if path.startswith("/oidc.ashx"):
            assert op.get("tags") == ["identity provider (OIDC)"], (method, path)
    linen = (await app_client.get("/api/openapi.json")).json()
    for path in ("/v1/invoices/{invoice_id}/pdf", "/laundry/invoices/{invoice_id}/pdf"):
        content = linen["paths"][path]["get"]["responses"]["200"]["content"]
        assert content == {"application/pdf": {"schema": {"type": "string", "format": "binary"}}}
