"""The signaling secret from the CLI signs requests; the handler is in the OpenAPI document."""

from __future__ import annotations

import asyncio

from click.testing import CliRunner
from httpx import ASGITransport, AsyncClient

from switchboard.app import create_app
from switchboard.cli import main
from switchboard.settings import Settings
from tests.factories import TenantFixture
from tests.whitelist.conftest import sign


def test_cli_prints_the_key_that_signs_whitelist_requests(cli: CliRunner) -> None:
    assert cli.invoke(main, ["tenant", "create", "ops", "--domain", "ops.test"]).exit_code == 0
    result = cli.invoke(main, ["tenant", "signaling-secret", "ops"])
    assert result.exit_code == 0, result.output
    secret = result.output.strip()
    assert len(secret) >= 32
    missing = cli.invoke(main, ["tenant", "signaling-secret", "nobody"])
    assert missing.exit_code == 2

    async def listed() -> tuple[int, int]:
        app = create_app(Settings(run_workers=False))
        transport = ASGITransport(app=app)
        async with AsyncClient(transport=transport, base_url="http://ops.test") as client:
            good = await client.get(
                "/signal.ashx",
                params={"whitelist": "list"},
                headers={"X-Platform-Admin-Signature": sign(secret, "whitelist-list|ops")},
            )
            bad = await client.get(
                "/signal.ashx",
                params={"whitelist": "list"},
                headers={"X-Platform-Admin-Signature": sign(secret + "x", "whitelist-list|ops")},
            )
        return good.status_code, bad.status_code

    assert asyncio.run(listed()) == (200, 401)


async def test_openapi_lists_the_whitelist_and_routing_endpoints(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    paths = (await app_client.get("/openapi.json")).json()["paths"]
    assert {"get", "post"} <= set(paths["/signal.ashx"])
    assert "requestBody" in paths["/signal.ashx"]["post"]
    for path in (
        "/api.ashx/v1/inbound-routes",
        "/api.ashx/v1/inbound-routes/{did}",
        "/api.ashx/v1/inbound-routes:resolve",
        "/api.ashx/v1/outbound-routes",
        "/api.ashx/v1/outbound-routes/{match}",
        "/api.ashx/v1/outbound-routes:resolve",
    ):
        assert path in paths, path


async def test_the_document_requires_every_member_the_whitelist_replies_carry(
    app_client: AsyncClient, acme_secret: str, acme: TenantFixture
) -> None:
    """Spec 4.8 lists `ok` in both replies of the POST: a client generated from the document
    must be able to rely on it, so it is required there, like every other member sent."""
    schemas = (await app_client.get("/openapi.json")).json()["components"]["schemas"]

    async def post(action: str, body: bytes) -> dict[str, object]:
        canonical = f"whitelist-{action}|{acme.name}|{len(body)}"
        response = await app_client.post(
            f"/signal.ashx?whitelist={action}",
            content=body,
            headers={
                "Host": acme.host,
                "Content-Type": "application/json",
                "X-Platform-Admin-Signature": sign(acme_secret, canonical),
            },
        )
        assert response.status_code == 200, response.text
        reply: dict[str, object] = response.json()
        return reply

    added = await post("add", b'{"number": "+4930111", "comment": "office"}')
    written = await post("write", b'{"numbers": [{"number": "+4930111"}]}')

    assert set(schemas["WhitelistAdded"]["required"]) == set(added)
    assert set(schemas["WhitelistWritten"]["required"]) == set(written)
    assert added["ok"] is True
    assert written["ok"] is True


async def test_the_document_says_unknown_body_keys_are_refused(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    """The server refuses a key that is no field (decision 0033), at the top and in each entry;
    the document says so with `additionalProperties: false`, as for every other JSON body."""
    document = (await app_client.get("/openapi.json")).json()
    operation = document["paths"]["/signal.ashx"]["post"]
    add, write = operation["requestBody"]["content"]["application/json"]["schema"]["oneOf"][:2]
    assert "add" in add["title"]
    assert "write" in write["title"]
    for schema in (add, write, write["properties"]["numbers"]["items"]):
        assert schema["additionalProperties"] is False, schema
    headers = await acme.auth(app_client)
    for action, body in (
        ("add", {"number": "+4930111", "label": "office"}),
        ("write", {"numbers": [{"number": "+4930111"}], "replace": True}),
        ("write", {"numbers": [{"number": "+4930111", "label": "office"}]}),
    ):
        response = await app_client.post(
            f"/signal.ashx?whitelist={action}", headers=headers, json=body
        )
        assert response.status_code == 400, response.text
        assert "not a field of this request" in response.json()["error_description"]
