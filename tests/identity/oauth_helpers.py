"""What the tests of the OAuth endpoints that take a client's form (token, revocation,
introspection) share: grants through HTTP, confidential clients, the answers' checks."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

import orjson
from httpx import AsyncClient, Response

from switchboard.identity import clients
from switchboard.runtime import Runtime
from switchboard.tenants import repository as tenants_repo
from tests.conftest import PRIMARY_HOST
from tests.factories import PASSWORD, TenantFixture

GRANT = "openid offline_access"
ISSUER = f"http://{PRIMARY_HOST}/oidc.ashx"
Form = dict[str, str] | list[tuple[str, str]]
# Cases of refused requests: the form, extra headers, the status and the error code.
Refusals = list[tuple[Form, dict[str, str], int, str]]


def client_form(client_id: str, secret: str | None) -> dict[str, str]:
    return {"client_id": client_id, **({"client_secret": secret} if secret else {})}


async def password_grant(
    client: AsyncClient,
    tenant: TenantFixture,
    *,
    client_id: str = "cli",
    secret: str | None = None,
    username: str = "admin",
    scope: str = GRANT,
) -> dict[str, Any]:
    form = {"grant_type": "password", "username": username, "password": PASSWORD, "scope": scope}
    form |= client_form(client_id, secret)
    answer = await client.post("/oidc.ashx/token", data=form, headers={"Host": tenant.host})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def refresh(
    client: AsyncClient,
    tenant: TenantFixture,
    token: str,
    *,
    client_id: str = "cli",
    secret: str | None = None,
) -> tuple[int, dict[str, Any]]:
    form = {"grant_type": "refresh_token", "refresh_token": token}
    form |= client_form(client_id, secret)
    answer = await client.post("/oidc.ashx/token", data=form, headers={"Host": tenant.host})
    body: dict[str, Any] = answer.json()
    return answer.status_code, body


async def post_form(
    client: AsyncClient, path: str, host: str, form: Form, **headers: str
) -> Response:
    """``form`` posted as is (repeated parameters and all); every answer is ``no-store``."""
    answer = await client.post(
        path,
        content=urlencode(form),
        headers={"Host": host, "Content-Type": "application/x-www-form-urlencoded", **headers},
    )
    assert answer.headers["cache-control"] == "no-store"
    return answer


async def confidential_client(runtime: Runtime, tenant: TenantFixture, client_id: str) -> str:
    """A new confidential client of ``tenant``; its secret."""
    async with runtime.db.transaction() as session:
        row = await tenants_repo.get_by_id(session, tenant.id)
        assert row is not None
        made = await clients.create_client(
            session, tenant=row, client_id=client_id, clock=runtime.clock
        )
        return clients.new_secret(made)


def basic(client_id: str, secret: str) -> str:
    """An ``Authorization: Basic`` header's value."""
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def jwt_part(token: str, index: int) -> dict[str, Any]:
    """A JWT's header (0) or claims (1), unchecked."""
    part: dict[str, Any] = orjson.loads(base64.urlsafe_b64decode(token.split(".")[index] + "=="))
    return part


async def assert_refused(
    client: AsyncClient, path: str, tenant: TenantFixture, cases: Refusals, *, valid: Form
) -> None:
    """Each case is answered with its OAuth error (a 401 with the Basic challenge), and the
    ``valid`` form on a host no tenant serves with 404 ``not_found``."""
    for form, headers, status, error in cases:
        answer = await post_form(client, path, tenant.host, form, **headers)
        assert (answer.status_code, answer.json()["error"]) == (status, error), form
        assert set(answer.json()) == {"error", "error_description"}
        if status == 401:
            assert answer.headers["www-authenticate"] == 'Basic realm="oidc"'
    answer = await post_form(client, path, "unknown.test", valid)
    assert (answer.status_code, answer.json()["error"]) == (404, "not_found")


async def provider_metadata(client: AsyncClient, tenant: TenantFixture) -> list[dict[str, Any]]:
    """The discovery document at both its addresses."""
    documents = []
    for path in (
        "/oidc.ashx/.well-known/openid-configuration",
        "/.well-known/oauth-authorization-server/oidc.ashx",
    ):
        answer = await client.get(path, headers={"Host": tenant.host})
        assert answer.status_code == 200, path
        documents.append(answer.json())
    return documents


async def form_operation(
    client: AsyncClient, path: str, statuses: Sequence[str]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The OpenAPI document, the POST operation at ``path`` (which documents ``statuses``) and
    its form body's schema, whose only required field is ``token``."""
    document: dict[str, Any] = (await client.get("/openapi.json")).json()
    operation: dict[str, Any] = document["paths"][path]["post"]
    assert set(statuses) <= set(operation["responses"])
    form = operation["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
    body: dict[str, Any] = document["components"]["schemas"][form["$ref"].rsplit("/", 1)[1]]
    assert body["required"] == ["token"]
    return document, operation, body
