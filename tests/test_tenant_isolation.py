"""Two tenants whose keys overlap walk every authenticated platform route.

Both tenants own an inbound route for the same DID, an outbound route for the same match, the
same whitelisted number, a virtual number, a call, a transcript, a webhook subscription and an
API key. Every value of acme's carries the marker ``acmeonly``; globex must never see it, and
every write globex makes must leave acme's data as it was. The walk fails when a route exists
that it does not cover, so a new route cannot skip this test.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from httpx import AsyncClient, Response

from switchboard.platform.numbers import service as numbers
from switchboard.platform.transcripts.service import save_transcript
from switchboard.platform.webhooks import service as webhooks
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests.factories import TenantFixture
from tests.transcripts.helpers import outbound

MARK = "acmeonly"
DID = "+15550001"
MATCH = "+1555*"
NUMBER = "+15550002"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"sim_speed": 2000})


@dataclass
class Seeded:
    headers: dict[str, str]
    host: str
    call_id: str = ""
    transcript_id: str = ""
    key_id: str = ""
    ids: dict[str, str] = field(default_factory=dict)


async def _seed(client: AsyncClient, runtime: Runtime, tenant: TenantFixture, label: str) -> Seeded:
    headers = await tenant.auth(client)
    seeded = Seeded(headers=headers, host=tenant.host)

    async def ok(response: Awaitable[Response]) -> dict[str, Any]:
        answered = await response
        assert answered.status_code in (200, 201), answered.text
        body: dict[str, Any] = answered.json()
        return body

    await ok(client.post("/api.ashx/v1/inbound-routes",
                         json={"Did": DID, "User": f"{label}-user"}, headers=headers))  # fmt: skip
    route = {"match": MATCH, "trunkIds": [f"{label}-trunk"]}
    await ok(client.post("/api.ashx/v1/outbound-routes", json=route, headers=headers))
    await ok(client.post("/signal.ashx?whitelist=add",
                         json={"number": NUMBER, "comment": f"{label}-comment"},
                         headers={**headers, "Host": tenant.host}))  # fmt: skip
    call_body = {
        "phone": "+15550100",
        "displayName": f"{label}-display",
        "email": f"{label}@example.com",
        "systemPrompt": f"{label} prompt",
        "apiKey": f"{label}-ai-key",
    }
    call = await ok(client.post("/api.ashx/v1/calls", json=call_body, headers=headers))
    seeded.call_id = call["callId"]
    key = await ok(client.post("/api.ashx/v1/api-keys", json={"name": f"{label}-key"},
                               headers=headers))  # fmt: skip
    seeded.key_id = key["id"]
    async with runtime.db.transaction() as session:
        await numbers.create_number(
            session, tenant_id=tenant.id, name=f"{label}-number", number="700", voice="Kore",
            language="en-US", api_key="k", system_prompt="p", box=runtime.box, clock=runtime.clock,
        )  # fmt: skip
        await webhooks.create_subscription(
            session, tenant_id=tenant.id, url=f"http://127.0.0.1:9/{label}", events=["*"],
            created_by=f"{label}-admin", clock=runtime.clock, box=runtime.box,
            allow=[ipaddress.ip_network("127.0.0.0/8")],
        )  # fmt: skip
        seeded.transcript_id = f"oac-{'a' if label == MARK else 'b'}bcdef012345"
        await save_transcript(
            session, tenant_id=tenant.id, tenant_name=tenant.name,
            data=outbound(seeded.transcript_id, display_name=f"{label}-display"),
            data_dir=runtime.settings.data_dir, clock=runtime.clock,
        )  # fmt: skip
    share = await ok(client.post(f"/api.ashx/v1/transcripts/{seeded.transcript_id}/shares",
                                 json={"ttlHours": 0}, headers=headers))  # fmt: skip
    seeded.ids.update(share=share["id"], token=share["token"])
    return seeded


Check = Callable[[AsyncClient, Seeded, Seeded], Awaitable[None]]


def _clean(response: Response, *allowed: int) -> None:
    assert response.status_code in allowed, (response.request.url, response.text)
    assert MARK not in response.text, (response.request.url, response.text)


def read(path: str) -> Check:
    """A read by globex shows none of acme's data."""

    async def check(client: AsyncClient, _acme: Seeded, globex: Seeded) -> None:
        _clean(await client.get(path, headers=globex.headers), 200)

    return check


def acme_id(path: str, method: str = "GET", body: Any = None) -> Check:
    """Addressing one of acme's own objects from globex is 404."""

    async def check(client: AsyncClient, acme: Seeded, globex: Seeded) -> None:
        url = path.format(
            call=acme.call_id, transcript=acme.transcript_id, key=acme.key_id, **acme.ids
        )
        response = await client.request(method, url, json=body, headers=globex.headers)
        _clean(response, 404)

    return check


async def _acme_routes_intact(client: AsyncClient, acme: Seeded) -> None:
    inbound = (await client.get("/api.ashx/v1/inbound-routes", headers=acme.headers)).json()
    assert {"did": DID, "fromNumber": "", "user": f"{MARK}-user"} in [
        {k: r.get(k) or "" for k in ("did", "fromNumber", "user")} for r in inbound["data"]
    ]
    outbound = (await client.get("/api.ashx/v1/outbound-routes", headers=acme.headers)).json()
    assert {"match": MATCH, "trunkIds": [f"{MARK}-trunk"]} in outbound["data"]


def overlap_write(method: str, path: str, body: Any) -> Check:
    """A write on a key both tenants use changes globex's row only."""

    async def check(client: AsyncClient, acme: Seeded, globex: Seeded) -> None:
        _clean(await client.request(method, path, json=body, headers=globex.headers), 200, 201)
        await _acme_routes_intact(client, acme)

    return check


async def _signal_other_host(client: AsyncClient, acme: Seeded, globex: Seeded) -> None:
    for method, action, body in (
        ("GET", "list", None),
        ("POST", "add", {"number": "+15557777"}),
        ("POST", "write", {"numbers": []}),
    ):
        refused = await client.request(
            method, f"/signal.ashx?whitelist={action}&confirmEmpty=1", json=body,
            headers={**globex.headers, "Host": acme.host},
        )  # fmt: skip
        assert refused.status_code in (401, 403), refused.text
    own_headers = {**globex.headers, "Host": globex.host}
    own = await client.get("/signal.ashx?whitelist=list", headers=own_headers)
    _clean(own, 200)
    acme_list = await client.get(
        "/signal.ashx?whitelist=list", headers={**acme.headers, "Host": acme.host}
    )
    assert {"number": NUMBER, "comment": f"{MARK}-comment"} in acme_list.json()["numbers"]


async def _signal_own_writes(client: AsyncClient, acme: Seeded, globex: Seeded) -> None:
    own = {**globex.headers, "Host": globex.host}
    _clean(await client.post("/signal.ashx?whitelist=add", json={"number": NUMBER}, headers=own),
           200)  # fmt: skip
    await _signal_other_host(client, acme, globex)


async def _super_admin_only(client: AsyncClient, _acme: Seeded, globex: Seeded) -> None:
    assert (await client.get("/api.ashx/v1/tenants", headers=globex.headers)).status_code == 403
    created = await client.post(
        "/api.ashx/v1/tenants", json={"name": "x", "domains": ["x.test"]}, headers=globex.headers
    )
    assert created.status_code == 403


async def _own_call(client: AsyncClient, _acme: Seeded, globex: Seeded) -> None:
    body = {"phone": "+15550199", "email": "g@example.com", "systemPrompt": "p", "apiKey": "k"}
    _clean(await client.post("/api.ashx/v1/calls", json=body, headers=globex.headers), 200)


async def _own_key(client: AsyncClient, _acme: Seeded, globex: Seeded) -> None:
    _clean(await client.post("/api.ashx/v1/api-keys", json={}, headers=globex.headers), 201)


async def _share_page(client: AsyncClient, acme: Seeded, globex: Seeded) -> None:
    """A share opens on its own tenant's host only; the page needs no bearer."""
    foreign = await client.get(f"/share/{acme.ids['token']}", headers={"Host": globex.host})
    _clean(foreign, 404)
    _clean(await client.get(f"/share/{globex.ids['token']}", headers={"Host": globex.host}), 200)
    own = await client.get(f"/share/{acme.ids['token']}", headers={"Host": acme.host})
    assert own.status_code == 200
    assert MARK in own.text


async def _revoke_share(client: AsyncClient, acme: Seeded, globex: Seeded) -> None:
    await acme_id("/api.ashx/v1/shares/{share}", "DELETE")(client, acme, globex)
    still = await client.get(f"/share/{acme.ids['token']}", headers={"Host": acme.host})
    assert still.status_code == 200


async def _userinfo(client: AsyncClient, acme: Seeded, globex: Seeded) -> None:
    """The bearer's claims, on its own tenant's host only."""
    for method in ("GET", "POST"):
        foreign = {**globex.headers, "Host": acme.host}
        _clean(await client.request(method, "/oidc.ashx/userinfo", headers=foreign), 401)
        own = {**globex.headers, "Host": globex.host}
        _clean(await client.request(method, "/oidc.ashx/userinfo", headers=own), 200)


WALK: dict[tuple[str, str], Check] = {
    ("GET", "/oidc.ashx/userinfo"): _userinfo,
    ("POST", "/oidc.ashx/userinfo"): _userinfo,
    ("GET", "/api.ashx/v1/transcripts/{call_id}/shares"): acme_id(
        "/api.ashx/v1/transcripts/{transcript}/shares"
    ),
    ("POST", "/api.ashx/v1/transcripts/{call_id}/shares"): acme_id(
        "/api.ashx/v1/transcripts/{transcript}/shares", "POST", {"ttlHours": 1}
    ),
    ("DELETE", "/api.ashx/v1/shares/{share_id}"): _revoke_share,
    ("GET", "/share/{token}"): _share_page,
    ("GET", "/api.ashx/v1/api-keys"): read("/api.ashx/v1/api-keys"),
    ("POST", "/api.ashx/v1/api-keys"): _own_key,
    ("DELETE", "/api.ashx/v1/api-keys/{key_id}"): acme_id("/api.ashx/v1/api-keys/{key}", "DELETE"),
    ("GET", "/api.ashx/v1/tenants"): _super_admin_only,
    ("POST", "/api.ashx/v1/tenants"): _super_admin_only,
    ("GET", "/api.ashx/v1/webhooks"): read("/api.ashx/v1/webhooks"),
    ("GET", "/api.ashx/v1/numbers"): read("/api.ashx/v1/numbers"),
    ("GET", "/api.ashx/v1/transcripts"): read("/api.ashx/v1/transcripts?q=display"),
    ("GET", "/api.ashx/v1/transcripts/{call_id}"): acme_id("/api.ashx/v1/transcripts/{transcript}"),
    ("GET", "/api.ashx/v1/calls"): read("/api.ashx/v1/calls"),
    ("POST", "/api.ashx/v1/calls"): _own_call,
    ("GET", "/api.ashx/v1/calls/{call_id}"): acme_id("/api.ashx/v1/calls/{call}"),
    ("POST", "/api.ashx/v1/calls/{call_id}/hangup"): acme_id(
        "/api.ashx/v1/calls/{call}/hangup", "POST"
    ),
    ("GET", "/api.ashx/v1/inbound-routes"): read("/api.ashx/v1/inbound-routes"),
    ("GET", "/api.ashx/v1/inbound-routes:resolve"): read(
        "/api.ashx/v1/inbound-routes:resolve?did=%2B15550001&fromNumber=%2B4930"
    ),
    ("GET", "/api.ashx/v1/inbound-routes/{did}"): read("/api.ashx/v1/inbound-routes/%2B15550001"),
    ("POST", "/api.ashx/v1/inbound-routes"): overlap_write(
        "POST", "/api.ashx/v1/inbound-routes", {"Did": "+15550003", "User": "g"}
    ),
    ("PUT", "/api.ashx/v1/inbound-routes/{did}"): overlap_write(
        "PUT", "/api.ashx/v1/inbound-routes/%2B15550001", {"User": "globex-new"}
    ),
    ("DELETE", "/api.ashx/v1/inbound-routes/{did}"): overlap_write(
        "DELETE", "/api.ashx/v1/inbound-routes/%2B15550001", None
    ),
    ("GET", "/api.ashx/v1/outbound-routes"): read("/api.ashx/v1/outbound-routes"),
    ("GET", "/api.ashx/v1/outbound-routes:resolve"): read(
        "/api.ashx/v1/outbound-routes:resolve?number=%2B15550100"
    ),
    ("GET", "/api.ashx/v1/outbound-routes/{match}"): read(
        "/api.ashx/v1/outbound-routes/%2B1555%2A"
    ),
    ("POST", "/api.ashx/v1/outbound-routes"): overlap_write(
        "POST", "/api.ashx/v1/outbound-routes", {"match": "+44*", "trunkIds": ["g"]}
    ),
    ("PUT", "/api.ashx/v1/outbound-routes/{match}"): overlap_write(
        "PUT", "/api.ashx/v1/outbound-routes/%2B1555%2A", {"trunkIds": ["globex-new"]}
    ),
    ("DELETE", "/api.ashx/v1/outbound-routes/{match}"): overlap_write(
        "DELETE", "/api.ashx/v1/outbound-routes/%2B1555%2A", None
    ),
    ("GET", "/signal.ashx"): _signal_other_host,
    ("POST", "/signal.ashx"): _signal_own_writes,
}

PUBLIC = {
    ("GET", "/api.ashx/v1"),
    ("POST", "/oidc.ashx/token"),
    # Revocation: the client and the token are looked up in the Host's tenant only; another
    # tenant's token is left alone (tests/identity/test_revoke.py::
    # test_another_tenants_token_is_left_alone).
    ("POST", "/oidc.ashx/revoke"),
    # Introspection: the asking client is the Host's tenant's, and another tenant's token is
    # inactive (tests/identity/test_introspect.py::test_another_tenants_token_is_inactive).
    ("POST", "/oidc.ashx/introspect"),
    ("GET", "/oidc.ashx/.well-known/openid-configuration"),
    ("GET", "/oidc.ashx/jwks"),
    # Browser sign-in: the tenant is the Host's; another tenant's session cookie, code or client
    # is refused (tests/identity/test_signin_isolation.py).
    ("GET", "/oidc.ashx/authorize"),
    ("POST", "/oidc.ashx/authorize"),
    ("GET", "/oidc.ashx/end_session"),
    ("POST", "/oidc.ashx/end_session"),
    # Federated sign-in: the provider is looked up in the Host's tenant only
    # (tests/identity/test_federation_isolation.py).
    ("GET", "/oidc.ashx/federation/{name}/start"),
    ("GET", "/oidc.ashx/federation/{name}/callback"),
    # Wallet sign-in: a request is looked up in the Host's tenant only
    # (tests/identity/test_wallet.py::test_another_tenants_host_neither_sees_nor_answers_a_request).
    ("GET", "/oidc.ashx/wallet/start"),
    ("GET", "/oidc.ashx/wallet/request/{state}"),
    ("POST", "/oidc.ashx/wallet/response"),
    ("GET", "/oidc.ashx/wallet/status"),
    # Credential issuer: the metadata and keys are the Host's tenant's; a code, access token or
    # c_nonce is looked up in the Host's tenant only, and another tenant's session cookie makes
    # no offer (tests/identity/issuance/test_refusals.py::
    # test_codes_tokens_and_nonces_belong_to_their_tenant, test_flow.py).
    ("GET", "/oidc.ashx/.well-known/openid-credential-issuer"),
    ("GET", "/oidc.ashx/.well-known/jwt-vc-issuer"),
    ("GET", "/oidc.ashx/credential-offer"),
    ("POST", "/oidc.ashx/credential-offer"),
    ("POST", "/oidc.ashx/nonce"),
    ("POST", "/oidc.ashx/credential"),
    # Status lists: a list is looked up in the Host's tenant only, another tenant's list id is
    # 404 (tests/identity/issuance/test_status.py::test_a_list_is_served_on_its_tenants_host_only).
    ("GET", "/oidc.ashx/status/{list_id}"),
}


async def test_every_route_keeps_tenants_apart(
    app_client: AsyncClient, runtime: Runtime, acme: TenantFixture, globex: TenantFixture
) -> None:
    document = (await app_client.get("/openapi.json")).json()
    operations = {
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method in item
        if method in ("get", "post", "put", "delete", "patch")
    }
    assert operations - PUBLIC == set(WALK), "every platform route needs an isolation check"

    acme_data = await _seed(app_client, runtime, acme, MARK)
    globex_data = await _seed(app_client, runtime, globex, "globex")
    for (method, path), check in WALK.items():
        try:
            await check(app_client, acme_data, globex_data)
        except AssertionError as exc:
            raise AssertionError(f"{method} {path}: {exc}") from exc
