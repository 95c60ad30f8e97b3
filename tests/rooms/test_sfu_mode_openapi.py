"""The ``sfu-mode`` request is in the platform's OpenAPI description, and works as described."""

from __future__ import annotations

from typing import Any

from httpx import AsyncClient

from switchboard.runtime import Runtime
from tests import factories


def _resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref", "")
    return document["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else schema


async def test_the_document_describes_sfu_mode_and_the_described_request_works(
    app_client: AsyncClient, runtime: Runtime, acme: factories.TenantFixture
) -> None:
    document = (await app_client.get("/openapi.json")).json()
    operation = document["paths"]["/signal.ashx"]["post"]
    parameters = {p["name"]: p for p in operation["parameters"]}
    assert parameters["sfu-mode"]["schema"]["enum"] == ["mesh", "sfu"]
    assert parameters["room"]["schema"]["pattern"].startswith("^")
    assert "whitelist" in parameters  # the whitelist keeps its parameter on the same operation
    assert "sfu-mode|<tenant>|<room>|<mode>|<bodyLen>" in operation["description"]
    bodies = operation["requestBody"]["content"]["application/json"]["schema"]["oneOf"]
    sfu_body = _resolve(document, bodies[-1])
    assert set(sfu_body["properties"]) == {"reason"}
    assert sfu_body["additionalProperties"] is False
    replies = operation["responses"]["200"]["content"]["application/json"]["schema"]["anyOf"]
    reply = _resolve(document, replies[-1])
    failed = _resolve(
        document, operation["responses"]["502"]["content"]["application/json"]["schema"]
    )
    assert reply == failed

    key = await factories.api_key(runtime, acme)
    response = await app_client.post(
        "/signal.ashx?sfu-mode=sfu&room=town-hall",
        json={"reason": "all hands"},
        headers={"Host": acme.host, "Authorization": f"Bearer {key}"},
    )

    assert response.status_code == 200
    body = response.json()
    assert set(reply["required"]) == set(body) == set(reply["properties"])  # all always sent
    assert body["mode"] in reply["properties"]["mode"]["enum"]
    assert (body["ok"], body["room"], body["mode"], body["changed"]) == (
        True, "town-hall", "sfu", True,
    )  # fmt: skip
