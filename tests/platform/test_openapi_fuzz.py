"""Schemathesis against the served OpenAPI documents, in-process, on fixed (derandomized) cases.

Zero server errors, zero responses that break the schema, zero endpoints that ignore auth: for
the platform API (with the identity provider's paths) and for the linen portal, on PostgreSQL,
which refuses what SQLite takes (integers out of range, malformed values in typed columns). On
SQLite the conformance run (tests/conformance, every check, over 13,700 cases) covers these
checks and more.
"""

from __future__ import annotations

import asyncio
from typing import Any

import hypothesis
import pytest
import schemathesis
from httpx import ASGITransport, AsyncClient
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.specs.openapi import checks as openapi_checks

from switchboard.app import create_app
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests import factories
from tests.conftest import PRIMARY_HOST

CHECKS = [
    not_a_server_error,
    openapi_checks.response_schema_conformance,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
    openapi_checks.ignored_auth,
]
EXAMPLES_PER_OPERATION = 20


async def _bearer(settings: Settings, document: str) -> str:
    """An API key for the platform; an OIDC access token for the portal (it takes no keys)."""
    runtime = Runtime(settings)
    tenant = await factories.tenant(runtime, "acme", [PRIMARY_HOST])
    if document == "/openapi.json":
        bearer = await factories.api_key(runtime, tenant)
    else:
        app = create_app(runtime=runtime)
        transport = ASGITransport(app=app)
        async with AsyncClient(transport=transport, base_url=f"http://{PRIMARY_HOST}") as client:
            bearer = await tenant.token(client)
    await runtime.db.dispose()
    return bearer


@pytest.mark.parametrize("document", ["/openapi.json", "/api/openapi.json"])
def test_every_operation_conforms(settings: Settings, document: str) -> None:
    if settings.database_url.startswith("sqlite"):
        pytest.skip("on SQLite the conformance run covers these checks (docs/conformance.md)")
    bearer = asyncio.run(_bearer(settings, document))
    headers = {"Authorization": f"Bearer {bearer}", "Host": PRIMARY_HOST}
    schema = schemathesis.openapi.from_asgi(document, create_app(settings))
    tested = 0
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result.err()
        operation = result.ok()

        @hypothesis.given(case=operation.as_strategy())
        @hypothesis.settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            derandomize=True,  # the same cases every run: CI never meets a new one by chance
            suppress_health_check=list(hypothesis.HealthCheck),
            phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
        )
        def run(case: schemathesis.Case[Any]) -> None:
            case.call_and_validate(headers=headers, checks=CHECKS)

        run()
        tested += 1
    assert tested >= 5
