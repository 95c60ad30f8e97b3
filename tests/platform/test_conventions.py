"""Conventions every endpoint shares: error body, no-store, 404/405, catalogue, OpenAPI."""

from __future__ import annotations

import logging
import re

import pytest
from httpx import AsyncClient

from switchboard.kit.clock import ManualClock
from tests.factories import TenantFixture


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/nowhere", 404, "not_found"),
        ("GET", "/api.ashx/v1/nowhere", 404, "not_found"),
        ("GET", "/oidc.ashx/nowhere", 404, "not_found"),
        ("GET", "/api/nowhere", 404, "not_found"),
        ("DELETE", "/api.ashx/v1", 405, "method_not_allowed"),
        ("GET", "/oidc.ashx/token", 405, "method_not_allowed"),
        ("GET", "/api.ashx/v1/api-keys", 401, "invalid_token"),
    ],
)
async def test_errors_use_the_error_body(
    app_client: AsyncClient, method: str, path: str, status: int, code: str
) -> None:
    response = await app_client.request(method, path)
    assert response.status_code == status
    assert response.json() == {
        "error": code,
        "error_description": response.json()["error_description"],
    }
    assert response.json()["error_description"]
    assert response.headers["cache-control"] == "no-store"
    if status == 405:
        assert response.headers["allow"]


@pytest.mark.parametrize(
    ("path", "allow"),
    [
        ("/api.ashx/v1/api-keys", "GET, HEAD, POST"),
        ("/api.ashx/v1/outbound-routes/x", "DELETE, GET, HEAD, PUT"),
        ("/oidc.ashx/authorize", "GET, HEAD, POST"),
        ("/api/v1/properties", "GET, HEAD, POST"),
        ("/api/v1/properties/1", "DELETE, GET, HEAD, PATCH"),
    ],
)
async def test_405_allow_names_every_method_of_the_path(
    app_client: AsyncClient, path: str, allow: str
) -> None:
    """RFC 9110: the 405's ``Allow`` lists the resource's methods, not one route's."""
    response = await app_client.options(path)
    assert response.status_code == 405
    assert response.headers["allow"] == allow


async def test_head_is_the_get_without_its_body(
    app_client: AsyncClient, acme: TenantFixture, caplog: pytest.LogCaptureFixture
) -> None:
    """Every resource that answers GET answers HEAD (decision 0015), as its 405 ``Allow``
    says: the same status and headers, no body; the access log names the HEAD."""
    headers = {**await acme.auth(app_client), "Host": acme.host}
    for path in ("/api.ashx/v1/calls", "/api.ashx/v1/numbers", "/api.ashx/v1/transcripts",
                 "/api.ashx/v1/inbound-routes", "/signal.ashx?whitelist=list",
                 "/api/v1/properties"):  # fmt: skip
        got = await app_client.get(path, headers=headers)
        caplog.clear()  # only the HEAD's own line counts
        with caplog.at_level(logging.INFO, logger="switchboard.access"):
            head = await app_client.head(path, headers=headers)
        assert (got.status_code, head.status_code, head.content) == (200, 200, b""), path
        assert head.headers["content-length"] == str(len(got.content)), path
        assert head.headers["content-type"] == got.headers["content-type"], path
        assert head.headers["cache-control"] == "no-store"
        (line,) = [r for r in caplog.records if r.name == "switchboard.access"]
        assert (line.method, line.status) == ("HEAD", 200)  # type: ignore[attr-defined]
        caplog.clear()
    stranger = await app_client.head("/api.ashx/v1/calls")
    assert (stranger.status_code, stranger.content) == (401, b"")
    assert stranger.headers["www-authenticate"].startswith("Bearer")
    post_only = await app_client.head("/oidc.ashx/token")
    assert post_only.status_code == 405
    assert "HEAD" not in post_only.headers["allow"]


async def test_bad_body_and_query_are_400_never_422(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    headers = await acme.auth(app_client)
    not_json = await app_client.post(
        "/api.ashx/v1/api-keys",
        content=b"{not json",
        headers={**headers, "Content-Type": "application/json"},
    )
    assert (not_json.status_code, not_json.json()["error"]) == (400, "invalid_request")
    deep = b"[" * 5000 + b"]" * 5000  # deeper than any JSON parser of the platform follows
    for path in ("/api.ashx/v1/calls", "/oidc.ashx/token", "/api/v1/properties"):
        nested = await app_client.post(
            path, content=deep, headers={**headers, "Content-Type": "application/json"}
        )
        assert (nested.status_code, nested.json()["error"]) == (400, "invalid_request"), path
    wrong_type = await app_client.post("/api.ashx/v1/api-keys", json={"name": 5}, headers=headers)
    assert wrong_type.status_code == 400
    assert "name" in wrong_type.json()["error_description"]
    for query in ("limit=0", "limit=501", "offset=-1", "limit=abc"):
        response = await app_client.get(f"/api.ashx/v1/api-keys?{query}", headers=headers)
        assert response.status_code == 400, query
        assert response.json()["error"] == "invalid_request"
    listed = await app_client.get("/api.ashx/v1/api-keys", headers=headers)
    assert listed.json()["total"] == 0  # nothing was written by the rejected requests


async def test_a_json_object_sent_as_another_media_type_is_400_naming_the_content_type(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    """Spec 7 has 400 for bad input (decision 0212): a form's or text's Content-Type on a JSON
    body, or none at all, is named as the fault, and nothing is created."""
    headers = await acme.auth(app_client)
    for path, body in (
        ("/api.ashx/v1/inbound-routes", b'{"Did": "100", "User": "bob"}'),
        ("/api.ashx/v1/outbound-routes", b'{"match": "+1*", "trunkIds": ["a"]}'),
        ("/api.ashx/v1/api-keys", b'{"name": "scripts"}'),
    ):
        for media in ("text/plain", "application/x-www-form-urlencoded"):
            response = await app_client.post(
                path, content=body, headers={**headers, "Content-Type": media}
            )
            assert response.status_code == 400, (path, media)
            assert response.json() == {
                "error": "invalid_request",
                "error_description": "the body must be JSON, sent as Content-Type: "
                f"application/json, not {media}",
            }
        bare = await app_client.post(path, content=body, headers=headers)
        assert "content-type" not in bare.request.headers
        assert bare.status_code == 400, path
        assert bare.json() == {
            "error": "invalid_request",
            "error_description": "the body must be JSON, sent as Content-Type: "
            "application/json (the request has no Content-Type)",
        }
    routes = (await app_client.get("/api.ashx/v1/inbound-routes", headers=headers)).json()
    assert [r["did"] for r in routes["data"]] == ["*"]
    assert (await app_client.get("/api.ashx/v1/api-keys", headers=headers)).json()["total"] == 0
    as_json = await app_client.post(
        "/api.ashx/v1/api-keys",
        content=b'{"name": "scripts"}',
        headers={**headers, "Content-Type": "application/json; charset=utf-8"},
    )
    assert as_json.status_code == 201
    array = await app_client.post("/api.ashx/v1/api-keys", json=[], headers=headers)
    assert array.status_code == 400
    assert "Content-Type" not in array.json()["error_description"]  # JSON, just no object


async def test_paging_envelope_and_next_link(
    app_client: AsyncClient, acme: TenantFixture, clock: ManualClock
) -> None:
    headers = await acme.auth(app_client)
    for i in range(3):
        clock.advance(1)
        created = await app_client.post(
            "/api.ashx/v1/api-keys", json={"Name": f"k{i}"}, headers=headers
        )
        assert created.json()["name"] == f"k{i}"  # PascalCase accepted on input
    first = (await app_client.get("/api.ashx/v1/api-keys?limit=2", headers=headers)).json()
    assert (first["total"], first["limit"], first["offset"]) == (3, 2, 0)
    assert len(first["data"]) == 2
    assert first["next"] == "/api.ashx/v1/api-keys?limit=2&offset=2"
    second = (await app_client.get(first["next"], headers=headers)).json()
    assert [k["name"] for k in second["data"]] == ["k2"]
    assert second["next"] is None
    default = (await app_client.get("/api.ashx/v1/api-keys", headers=headers)).json()
    assert (default["limit"], default["offset"]) == (50, 0)


async def test_catalogue_is_public_and_lists_every_route(app_client: AsyncClient) -> None:
    response = await app_client.get("/api.ashx/v1")
    assert response.status_code == 200
    body = response.json()
    assert body["build"]
    routes = {(r["method"], r["path"]): r for r in body["routes"]}
    assert ("POST", "/oidc.ashx/token") in routes
    assert routes[("GET", "/api.ashx/v1/api-keys")]["auth"] is True
    assert routes[("GET", "/api.ashx/v1")]["auth"] is False


async def test_catalogue_is_the_same_document_on_every_request(app_client: AsyncClient) -> None:
    first = await app_client.get("/api.ashx/v1")
    second = await app_client.get("/api.ashx/v1")
    assert first.content == second.content
    assert first.headers["content-type"] == "application/json"
    body = first.json()
    assert sorted(body) == sorted(
        ["name", "version", "softwareVersion", "build", "docs", "openapi", "routes"]
    )
    assert body["version"] == "v1"
    assert (body["docs"], body["openapi"]) == ("/docs", "/openapi.json")
    paths = (await app_client.get("/openapi.json")).json()["paths"]
    listed = {(r["method"], r["path"]) for r in body["routes"]}
    described = {(m.upper(), p) for p, item in paths.items() for m in item if m != "parameters"}
    assert listed == described
    schema = paths["/api.ashx/v1"]["get"]["responses"]["200"]["content"]["application/json"]
    assert schema["schema"]["$ref"].endswith("/Catalogue")


async def test_the_catalogue_answers_like_every_route(
    app_client: AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Served ahead of the routing (decision 0940), it keeps the request id, the access log
    line, the latency metric and no-store; HEAD is its GET without a body; a query string or
    another method takes the full stack, which answers the same bytes or the same refusals."""
    with caplog.at_level(logging.INFO, logger="switchboard.access"):
        plain = await app_client.get("/api.ashx/v1", headers={"X-Request-Id": "cat-1"})
    assert plain.headers["x-request-id"] == "cat-1"
    assert plain.headers["cache-control"] == "no-store"
    assert int(plain.headers["content-length"]) == len(plain.content)
    (line,) = [r for r in caplog.records if r.name == "switchboard.access"]
    assert (line.route, line.status, line.request_id) == ("/api.ashx/v1", 200, "cat-1")  # type: ignore[attr-defined]
    head = await app_client.head("/api.ashx/v1")
    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["content-length"] == plain.headers["content-length"]
    queried = await app_client.get("/api.ashx/v1", params={"verbose": "1"})
    assert queried.content == plain.content
    assert queried.headers["cache-control"] == "no-store"
    assert (await app_client.get("/api.ashx/v1", params={"x": "\x00"})).status_code == 400
    refused = await app_client.post("/api.ashx/v1")
    assert refused.status_code == 405
    assert refused.json()["error"] == "method_not_allowed"
    malformed = await app_client.get("/api.ashx/v1", headers={"X-Request-Id": "no spaces"})
    assert re.fullmatch(r"[0-9a-f]{16}", malformed.headers["x-request-id"])
    scrape = (await app_client.get("/metrics")).text
    series = 'method="{}",route="/api.ashx/v1",status="200"'
    # Two GETs ahead of the routing and the queried one through the access log: one series.
    get_count = f"switchboard_http_request_duration_seconds_count{{{series.format('GET')}}} 3.0"
    head_count = f"switchboard_http_request_duration_seconds_count{{{series.format('HEAD')}}} 1.0"
    assert get_count in scrape.splitlines()
    assert head_count in scrape.splitlines()


async def test_openapi_served_at_both_paths(app_client: AsyncClient) -> None:
    first = await app_client.get("/openapi.json")
    second = await app_client.get("/.well-known/openapi.json")
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()
    document = first.json()
    assert document["openapi"].startswith("3.1")
    assert "bearer" in document["components"]["securitySchemes"]
    assert "/api.ashx/v1/api-keys" in document["paths"]


@pytest.mark.parametrize("url", ["/openapi.json", "/api/openapi.json"])
async def test_openapi_documents_bad_input_as_the_400_it_answers(
    app_client: AsyncClient, url: str
) -> None:
    """Validation failures are answered 400 with the error body (above), so no document
    promises FastAPI's 422 and every operation that takes input documents the 400 (as the
    error body, or as the HTML page of the browser-facing sign-in steps)."""
    document = (await app_client.get(url)).json()
    assert not {"HTTPValidationError", "ValidationError"} & set(document["components"]["schemas"])
    for path, item in document["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            assert "422" not in responses, (method, path)
            if operation.get("parameters") or "requestBody" in operation:
                assert "400" in responses, (method, path)
                json_body = responses["400"].get("content", {}).get("application/json")
                if json_body is not None:
                    error_body = {"$ref": "#/components/schemas/ErrorBody"}
                    assert json_body["schema"] == error_body, (method, path)


async def test_unroutable_paths_still_get_the_error_body(app_client: AsyncClient) -> None:
    response = await app_client.get("/api.ashx/v1/calls/a%0Ab")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
    assert response.headers["cache-control"] == "no-store"


async def test_a_slash_too_many_is_no_route_and_redirects_nowhere(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    """One answer for a path that is not a route, on every API alike (the framework's redirect
    named an absolute URL, http behind a TLS proxy); the spec's base address, with its slash,
    is the catalogue."""
    headers = await acme.auth(app_client)
    for path in (
        "/api.ashx/v1/calls/", "/api.ashx/v1/webhooks/", "/api.ashx/v1/api-keys/",
        "/api/v1/properties/", "/oidc.ashx/token/", "/oidc.ashx/jwks/",
    ):  # fmt: skip
        response = await app_client.get(path, headers=headers)
        assert (response.status_code, response.json()["error"]) == (404, "not_found"), path
        assert "location" not in response.headers, path
    base = await app_client.get("/api.ashx/v1/")
    assert (base.status_code, base.content) == (200, (await app_client.get("/api.ashx/v1")).content)


async def test_every_response_is_no_store_assets_and_errors_included(
    app_client: AsyncClient,
) -> None:
    paths = (
        "/api/docs/assets/index.css", "/docs/assets/swagger-ui.css", "/docs/assets/nope.js",
        "/api/docs/assets/nope.js", "/admin/static/nope.css", "/api/docs", "/api/openapi.json",
        "/api/version", "/openapi.json",
    )  # fmt: skip
    for path in paths:
        response = await app_client.get(path)
        assert response.headers["cache-control"] == "no-store", path
    assert (await app_client.get("/api/docs/assets/index.css")).status_code == 200
    missing = await app_client.get("/docs/assets/nope.js")
    assert missing.status_code == 404
    assert missing.json()["error"] == "not_found"


async def test_the_bare_mounts_and_the_root_lead_to_pages(app_client: AsyncClient) -> None:
    for path, target in (("/", "/admin/"), ("/admin", "/admin/"), ("/app", "/app/")):
        response = await app_client.get(path)
        assert (response.status_code, response.headers["location"]) == (307, target), path


@pytest.mark.parametrize(
    ("method", "url", "body", "described"),
    [
        # FastAPI's validation of a parameter: the name alone, no `query.` in front
        ("GET", "/api.ashx/v1/calls?limit=0", None, "limit: Input should be greater than or"),
        ("GET", "/api/v1/properties?limit=x", None, "limit: Input should be a valid integer"),
        ("GET", "/api.ashx/v1/transcripts?source=x", None, "source: String should match"),
        # a hand-written check of a parameter
        ("GET", "/api.ashx/v1/transcripts?since=yesterday", None, "since: not an ISO 8601 UTC"),
        ("POST", "/signal.ashx?sfu-mode=x&room=a", None, "sfu-mode: one of mesh, sfu"),
        # a body field, by pydantic, by a validator (without pydantic's "Value error, ") and by
        # the strict JSON types check of the whole body
        ("POST", "/api/v1/properties", {"code": "A", "name": 3}, "name: Input should be a valid"),
        ("POST", "/api.ashx/v1/calls", {"phone": "1"}, "phone: must be an E.164 number"),
        ("POST", "/api.ashx/v1/calls", {"maxSeconds": "3"}, "maxSeconds: must be an integer"),
        ("POST", "/api.ashx/v1/calls", [], "body: Input should be a valid dictionary"),
    ],
)
async def test_a_bad_input_is_named_one_way_whichever_check_refused_it(
    app_client: AsyncClient,
    acme: TenantFixture,
    method: str,
    url: str,
    body: object,
    described: str,
) -> None:
    """Every description names the input as the client sent it, then says what is wrong:
    ``name: text`` (spec 7's body, `invalid_request`)."""
    headers = await acme.auth(app_client)
    response = await app_client.request(method, url, json=body, headers=headers)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert response.json()["error_description"].startswith(described), response.json()
