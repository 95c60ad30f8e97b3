"""Every Data API and Laundry API operation, fed wrong values: a clear 4xx, never 422 or 5xx."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.linen.helpers import World, invoice_meta

DOCS = Path(__file__).resolve().parents[2] / "docs" / "linen.md"
NASTY: list[Any] = [-1, 2**40, "x", None, [], 1.5]
ACCEPTED = {200, 201, 400, 404, 409, 413, 415}


def _body_properties(document: dict[str, Any], operation: dict[str, Any]) -> list[str]:
    content = operation.get("requestBody", {}).get("content", {})
    schema = content.get("application/json", {}).get("schema", {})
    for option in schema.get("anyOf", [schema]):
        ref = option.get("$ref", "")
        if ref:
            target = document["components"]["schemas"][ref.rsplit("/", 1)[-1]]
            return list(target.get("properties", {}))
    return []


async def test_wrong_values_everywhere_are_clear_4xx(world: World) -> None:
    portal = world.portal
    sheet = await world.confirmed()
    document = (await portal.client.get("/api/openapi.json")).json()
    admin = await portal.auth("admin")
    laundry = world.laundry_headers()
    sent = 0
    # The Laundry API first: the Data API part below rotates and revokes the laundry's key.
    paths = sorted(document["paths"].items(), key=lambda kv: not kv[0].startswith("/laundry"))
    for template, item in paths:
        for method, operation in item.items():
            if template == "/version":
                continue
            headers = laundry if template.startswith("/laundry") else admin
            valid_path = re.sub(r"{\w+}", str(sheet["id"]), template)
            requests: list[tuple[str, dict[str, Any], Any]] = []
            for value in (0, -1, 2**40, "x"):
                requests.append((re.sub(r"{\w+}", str(value), template), {}, None))
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query":
                    for value in ("-1", str(2**40), "2026-13-45"):
                        requests.append((valid_path, {parameter["name"]: value}, None))
            properties = _body_properties(document, operation)
            if properties or method in ("post", "put", "patch"):
                requests += [(valid_path, {}, []), (valid_path, {}, "text"), (valid_path, {}, {})]
                for name in properties:
                    requests += [(valid_path, {}, {name: value}) for value in NASTY]
            for path, params, body in requests:
                response = await portal.client.request(
                    method.upper(), f"/api{path}", params=params, json=body, headers=headers
                )
                sent += 1
                assert response.status_code in ACCEPTED, (method, path, params, body, response.text)
                if response.status_code >= 400:
                    assert set(response.json()) == {"error", "error_description"}
    assert sent > 500


async def test_wrong_json_types_are_400_not_coerced(world: World) -> None:
    """``0`` is no boolean, ``false`` no amount, ``0`` no date: the document's types, strictly."""
    portal = world.portal
    price_list = f"/v1/laundries/{world.laundry}/price-lists"
    cases: list[tuple[str, str, dict[str, Any]]] = [
        ("PATCH", f"/v1/laundries/{world.laundry}", {"active": 0}),
        ("PATCH", f"/v1/properties/{world.property}", {"active": "true"}),
        ("PATCH", f"/v1/item-types/{world.duvet}", {"active": 1}),
        ("POST", "/v1/laundries", {"name": "Other", "active": 0}),
        ("POST", price_list, {"currency": "EUR", "validFrom": 0}),
        ("POST", price_list, {"currency": "EUR", "validFrom": "2027-01-01", "deliveryFee": True}),
        ("POST", price_list, {"currency": "EUR", "validFrom": "2027-01-01",
                              "items": [{"itemTypeId": world.duvet, "unitPrice": False}]}),
    ]  # fmt: skip
    for method, path, body in cases:
        response = await portal.client.request(
            method, f"/api{path}", json=body, headers=await portal.auth("admin")
        )
        assert response.status_code == 400, (method, path, body, response.text)
        assert response.json()["error"] == "invalid_request"
    laundry = await portal.get(f"/v1/laundries/{world.laundry}")
    assert laundry.json()["active"] is True  # nothing was written


async def test_query_days_are_calendar_dates(world: World) -> None:
    portal = world.portal
    for path, params in (
        (f"/v1/properties/{world.property}/balance", {"until": "0"}),
        ("/v1/sheets", {"from": "20260101"}),
        ("/v1/statistics", {"to": "1700000000"}),
    ):
        response = await portal.get(path, **params)
        assert response.status_code == 400, (path, params, response.text)
    assert (await portal.get("/v1/sheets", **{"from": "2026-01-01"})).status_code == 200


async def test_a_laundry_email_with_a_control_character_is_refused(world: World) -> None:
    portal = world.portal
    for email in ("a\u0085b@x.test", "ab@x\x1c.test", "a b@x.test", "a\x7f@x.test", "no-at.test"):
        refused = await portal.post("/v1/laundries", {"name": "Odd", "email": email})
        assert refused.status_code == 400, (email, refused.text)
        assert refused.json()["error"] == "invalid_request"
    listed = (await portal.get("/v1/laundries")).json()
    assert all(row["name"] != "Odd" for row in listed["data"])
    assert (
        await portal.post("/v1/laundries", {"name": "Odd", "email": "ops@x.test"})
    ).status_code == 201


async def test_a_json_body_without_content_type_is_400_saying_so(world: World) -> None:
    """Decision 0212 holds for a body sent with no ``Content-Type`` at all, as curl sends
    ``--data-binary`` with ``-H 'Content-Type:'``: nothing is created."""
    portal = world.portal
    body = b'{"name": "x", "kind": "region"}'
    for method, path in (
        ("POST", "/api/v1/groups"),
        ("PATCH", f"/api/v1/laundries/{world.laundry}"),
    ):
        response = await portal.client.request(
            method, path, content=body, headers=await portal.auth("admin")
        )
        assert "content-type" not in response.request.headers
        assert response.status_code == 400, (method, path, response.text)
        assert response.json() == {
            "error": "invalid_request",
            "error_description": "the body must be JSON, sent as Content-Type: "
            "application/json (the request has no Content-Type)",
        }
    assert (await portal.get("/v1/groups")).json()["total"] == 0
    sent_as_json = await portal.post("/v1/groups", {"name": "x", "kind": "region"})
    assert sent_as_json.status_code == 201


async def test_an_upload_that_is_not_multipart_is_415_as_documented(world: World) -> None:
    portal = world.portal
    admin = await portal.auth("admin")
    for path, headers in (
        ("/api/laundry/invoices", world.laundry_headers()),
        ("/api/v1/invoices", admin),
    ):
        response = await portal.client.post(path, json={"invoiceNumber": "A-1"}, headers=headers)
        assert response.status_code == 415, path
        assert response.json()["error"] == "unsupported_media_type"
    assert "415** `unsupported_media_type`" in DOCS.read_text()
    document = (await portal.client.get("/api/openapi.json")).json()
    upload = document["paths"]["/laundry/invoices"]["post"]
    assert "415 `unsupported_media_type`" in upload["description"]
    assert (await portal.get("/v1/invoices")).json()["total"] == 0


async def test_a_currency_must_be_one_of_iso_4217(world: World) -> None:
    """Three capitals are not enough: ``ZZZ`` is no currency, in a price list or an invoice."""
    portal = world.portal
    prices = f"/v1/laundries/{world.laundry}/price-lists"
    for code in ("ZZZ", "ABC", "EUX"):
        refused = await portal.post(prices, {"currency": code, "validFrom": "2027-01-01"})
        assert refused.status_code == 400, code
        assert refused.json() == {
            "error": "invalid_request",
            "error_description": f"currency: '{code}' is not an ISO 4217 currency code",
        }
        upload = await world.upload({**invoice_meta("INV-1", []), "currency": code})
        assert (upload.status_code, upload.json()["error"]) == (400, "invalid_request")
        assert upload.json()["error_description"].startswith("metadata: currency: ")
    assert (await portal.get(prices)).json()["total"] == 1
    assert (await portal.get("/v1/invoices")).json()["total"] == 0
    for code in ("CHF", "JPY"):
        made = await portal.post(prices, {"currency": code, "validFrom": "2027-01-01"})
        assert made.status_code == 201, made.text
    document = (await portal.client.get("/api/openapi.json")).json()
    currency = document["components"]["schemas"]["PriceListIn"]["properties"]["currency"]
    assert {"EUR", "CHF", "JPY"} <= set(currency["enum"])
    assert "ZZZ" not in currency["enum"]


async def test_range_and_amount_refusals_name_their_field_first(world: World) -> None:
    """Decision 0214: every description of bad input is ``name: what is wrong``."""
    portal = world.portal
    entry = await portal.made(
        "/v1/vault", {"propertyId": world.property, "kind": "wifi", "label": "Wi-Fi", "secret": "s"}
    )
    backwards = {"from": "2026-02-01", "to": "2026-01-01"}
    laundry = world.laundry_headers()
    meta = invoice_meta("INV-1", [])
    line = {"description": "towels", "qty": 2, "unitPrice": 100}
    answers = [
        *[(await portal.get(path, **backwards), "invalid_range", "to: must not be before from")
          for path in ("/v1/sheets", "/v1/invoices", "/v1/statistics")],
        (await portal.client.get("/api/laundry/jobs", params=backwards, headers=laundry),
         "invalid_range", "to: must not be before from"),
        (await portal.post(f"/v1/laundries/{world.laundry}/price-lists",
                           {"currency": "EUR", "validFrom": "2027-02-01", "validTo": "2027-01-01"}),
         "invalid_range", "validTo: must not be before validFrom"),
        (await portal.patch(f"/v1/vault/{entry['id']}",
                            {"validFrom": "2027-02-01", "validTo": "2027-01-01"}),
         "invalid_range", "validTo: must not be before validFrom"),
        (await world.upload({**meta, "periodFrom": "2026-02-01", "periodTo": "2026-01-01"}),
         "invalid_range", "periodTo: must not be before periodFrom"),
        (await world.upload({**meta, "gross": 1}), "amounts_mismatch",
         "gross: must equal net + tax"),
        (await world.upload({**meta, "lines": [{**line, "net": 100}]}), "amounts_mismatch",
         "lines[0].net: must equal qty x unitPrice"),
        (await world.upload({**meta, "lines": [{**line, "net": 200}]}), "amounts_mismatch",
         "net: must equal the sum of the lines' net (an invoice without lines has a net of 0)"),
        (await portal.post("/v1/sheets", {"propertyId": world.property,
                                          "serviceDate": "2026-01-10", "pickupDate": "2026-01-09"}),
         "invalid_request", "pickupDate: must not be before serviceDate"),
        (await portal.post("/v1/vault", {"kind": "wifi", "label": "x", "secret": "s"}),
         "invalid_request", "propertyId: required, or groupId (an entry belongs to one or the "
         "other)"),
        (await portal.post("/v1/vault", {"propertyId": world.property, "groupId": 1,
                                         "kind": "wifi", "label": "x", "secret": "s"}),
         "invalid_request", "groupId: not with propertyId; an entry belongs to one or the other"),
    ]  # fmt: skip
    for response, code, description in answers:
        assert response.status_code == 400, response.request.url
        assert response.json() == {"error": code, "error_description": description}
    assert (await portal.get("/v1/sheets")).json()["total"] == 0
    assert (await portal.get("/v1/invoices")).json()["total"] == 0
