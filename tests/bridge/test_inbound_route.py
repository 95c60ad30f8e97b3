"""``POST /bridge.ashx/v1/inbound-route``: who answers an inbound SIP call, over HTTP, signed as
the bridge signs it, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from httpx import AsyncClient, Response

from switchboard.bridge import protocol
from switchboard.identity import service as identity
from switchboard.kit.errors import BadRequest
from switchboard.platform.bridging.client import bridge_secret
from switchboard.platform.numbers import service as numbers
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from tests.factories import PASSWORD, TenantFixture

ROUTE = protocol.INBOUND_ROUTE_PATH
DID = "+4930100"
OFFICE_DID = "+4930200"


async def ask(
    client: AsyncClient, runtime: Runtime, secret: str | None = None, **fields: Any
) -> Response:
    body = orjson.dumps({"protocol": 1, **fields})
    signature = protocol.sign(secret or bridge_secret(runtime), body)
    return await client.post(
        ROUTE,
        content=body,
        headers={protocol.SIGNATURE_HEADER: signature, "Content-Type": "application/json"},
    )


async def add_number(
    runtime: Runtime, tenant: TenantFixture, number: str, label: str, **options: Any
) -> None:
    async with runtime.db.transaction() as session:
        await numbers.create_number(
            session, tenant_id=tenant.id, name=f"{label} desk", number=number,
            voice=options.pop("voice", "Kore"), language=options.pop("language", "de-DE"),
            api_key=f"{label}-ai-key", system_prompt=f"You are {label}'s receptionist.",
            box=runtime.box, clock=runtime.clock, **options,
        )  # fmt: skip


async def add_user(
    runtime: Runtime, tenant: TenantFixture, username: str, sip_uri: str | None
) -> None:
    async with runtime.db.transaction() as session:
        row = await tenants.require_by_name(session, tenant.name)
        await identity.create_user(
            session, tenant=row, username=username, password=PASSWORD, role="user",
            clock=runtime.clock, passwords=runtime.passwords,
        )  # fmt: skip
        if sip_uri is not None:
            await identity.set_sip_uri(session, tenant_id=tenant.id, username=username, uri=sip_uri)


async def add_route(
    client: AsyncClient, tenant: TenantFixture, did: str, user: str, from_number: str = ""
) -> None:
    route = {"Did": did, "User": user} | ({"FromNumber": from_number} if from_number else {})
    response = await client.post(
        "/api.ashx/v1/inbound-routes", json=route, headers=await tenant.auth(client)
    )
    assert response.status_code == 201, response.text


def refused(response: Response, status: int, error: str) -> str:
    assert (response.status_code, response.json()["error"]) == (status, error), response.text
    description: str = response.json()["error_description"]
    return description


async def test_a_virtual_number_on_the_tenant_domain_is_answered_by_its_receptionist(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    await add_number(runtime, acme, DID, "acme", voice="Charon", max_duration_sec=600)
    async with runtime.db.transaction() as session:
        row = await tenants.require_by_name(session, "acme")
        await tenants.set_setting(session, row, "DefaultModel", "gemini-live-test-model")
    # The route table also names a user for the DID: the virtual number matches first.
    await add_route(app_client, acme, DID, "anna")
    await add_user(runtime, acme, "anna", "sip:anna@pbx.acme.test")

    response = await ask(app_client, runtime, domain=acme.host, did=DID, fromNumber="+15551234")

    assert response.status_code == 200, response.text
    assert response.json() == {
        "tenant": "acme", "action": "ai", "rule": "", "number": DID, "name": "acme desk",
        "voice": "Charon", "language": "de-DE", "model": "gemini-live-test-model",
        "maxSeconds": 600, "systemPrompt": "You are acme's receptionist.",
        "apiKey": "acme-ai-key", "user": "", "sipUri": "",
    }  # fmt: skip


async def test_without_a_tenant_domain_the_did_of_a_virtual_number_names_the_tenant(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture, globex: TenantFixture
) -> None:
    await add_number(runtime, globex, DID, "globex")

    for domain in ("192.0.2.10", "", "unknown.example.net"):
        response = await ask(app_client, runtime, domain=domain, did=DID, fromNumber="anonymous")
        assert response.status_code == 200, response.text
        body = response.json()
        assert (body["tenant"], body["action"], body["apiKey"]) == ("globex", "ai", "globex-ai-key")
        assert body["model"] == "gemini-live-2.5-flash"  # the tenant's default
    # The international 00 spelling of the DID reaches the number stored with +.
    response = await ask(app_client, runtime, did="004930100")
    assert (response.status_code, response.json()["number"]) == (200, DID)


async def test_a_did_that_several_tenants_use_needs_the_tenant_domain(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture, globex: TenantFixture
) -> None:
    await add_number(runtime, acme, "200", "acme")
    await add_number(runtime, globex, "200", "globex")

    description = refused(await ask(app_client, runtime, did="200"), 404, "not_found")
    assert "several tenants" in description
    for tenant in (acme, globex):
        response = await ask(app_client, runtime, domain=tenant.host, did="200")
        assert response.json()["systemPrompt"] == f"You are {tenant.name}'s receptionist."


async def test_the_route_table_rings_the_office_tab_user_at_their_sip_address(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    await add_user(runtime, acme, "anna", "sip:anna@pbx.acme.test:5062;transport=tcp")
    await add_user(runtime, acme, "bob", "sips:bob@[2001:db8::7]")
    await add_route(app_client, acme, OFFICE_DID, "bob", from_number="+1555*")
    await add_route(app_client, acme, OFFICE_DID, "anna")

    response = await ask(app_client, runtime, domain="ACME.test", did=OFFICE_DID,
                         fromNumber="+4989123")  # fmt: skip
    assert response.status_code == 200, response.text
    assert response.json() == {
        "tenant": "acme", "action": "office-tab", "rule": "anna", "number": OFFICE_DID,
        "name": "", "voice": "", "language": "", "model": "", "maxSeconds": 0,
        "systemPrompt": "", "apiKey": "", "user": "anna",
        "sipUri": "sip:anna@pbx.acme.test:5062;transport=tcp",
    }  # fmt: skip
    # First match wins: the caller filter picks bob for US callers.
    response = await ask(app_client, runtime, domain=acme.host, did=OFFICE_DID,
                         fromNumber="+15551234")  # fmt: skip
    assert (response.json()["user"], response.json()["sipUri"]) == ("bob", "sips:bob@[2001:db8::7]")


async def test_no_route_is_404_and_says_why(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    await add_user(runtime, acme, "carol", None)
    await add_user(runtime, acme, "dave", "sip:dave@pbx.acme.test")
    async with runtime.db.transaction() as session:
        user = await identity.get_user(session, tenant_id=acme.id, username="dave")
        user.disabled = True
    await add_route(app_client, acme, "+4930300", "carol")
    await add_route(app_client, acme, "+4930400", "dave")
    await add_route(app_client, acme, "+4930500", "nobody")

    cases = {
        # the catchall rings admin, who has no SIP address
        "+4930999": "user 'admin' (no SIP address)",
        "+4930300": "user 'carol' (no SIP address)",
        "+4930400": "user 'dave' (disabled)",
        "+4930500": "user 'nobody' (no such user)",
    }
    for did, why in cases.items():
        response = await ask(app_client, runtime, domain=acme.host, did=did)
        assert why in refused(response, 404, "not_found")
    # No tenant domain and no virtual number: nobody to ask.
    refused(await ask(app_client, runtime, domain="192.0.2.10", did=OFFICE_DID), 404, "not_found")
    refused(await ask(app_client, runtime, domain=acme.host, did="  "), 404, "not_found")


async def test_tenants_never_reach_each_others_numbers_or_users(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture, globex: TenantFixture
) -> None:
    await add_number(runtime, acme, DID, "acme")
    await add_user(runtime, acme, "anna", "sip:anna@pbx.acme.test")
    await add_route(app_client, acme, OFFICE_DID, "anna")
    await add_user(runtime, globex, "anna", None)
    await add_route(app_client, globex, OFFICE_DID, "anna")

    # On globex's domain, acme's virtual number and acme's anna do not exist.
    for did in (DID, OFFICE_DID):
        response = await ask(app_client, runtime, domain=globex.host, did=did)
        description = refused(response, 404, "not_found")
        assert "acme" not in response.text
        assert "no SIP address" in description
    # And globex's changes leave acme's answer as it was.
    response = await ask(app_client, runtime, domain=acme.host, did=OFFICE_DID)
    assert response.json()["sipUri"] == "sip:anna@pbx.acme.test"


async def test_only_the_bridge_may_ask(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture
) -> None:
    await add_number(runtime, acme, DID, "acme")

    wrong = await ask(app_client, runtime, secret="not-the-secret", domain=acme.host, did=DID)
    assert "acme-ai-key" not in refused(wrong, 401, "bad_signature")
    body = orjson.dumps({"protocol": 1, "domain": acme.host, "did": DID})
    unsigned = await app_client.post(ROUTE, content=body)
    refused(unsigned, 401, "bad_signature")
    refused(await ask(app_client, runtime, domain=acme.host), 400, "invalid_request")
    refused(await ask(app_client, runtime, did=[DID]), 400, "invalid_request")
    future = await ask(app_client, runtime, protocol=2, domain=acme.host, did=DID)
    assert "protocol version 2" in refused(future, 400, "invalid_request")


@pytest.mark.parametrize(
    "uri",
    ["anna@pbx.test", "sip:", "http://pbx.test", "sip:anna@pbx test", "sip:a@" + "x" * 260,
     "sip:anna@pbx.test\nX-Injected: 1"],
)  # fmt: skip
async def test_a_bad_sip_address_is_refused_and_changes_nothing(
    runtime: Runtime, acme: TenantFixture, uri: str
) -> None:
    await add_user(runtime, acme, "anna", "sip:anna@pbx.acme.test")
    with pytest.raises(BadRequest):
        async with runtime.db.transaction() as session:
            await identity.set_sip_uri(session, tenant_id=acme.id, username="anna", uri=uri)
    async with runtime.db.transaction() as session:
        user = await identity.get_user(session, tenant_id=acme.id, username="anna")
        assert user.sip_uri == "sip:anna@pbx.acme.test"
