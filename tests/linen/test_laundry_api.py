"""The Laundry API and invoices: keys, jobs, delivery reports, uploads and invoice states."""

from __future__ import annotations

import orjson
from httpx import Response

from switchboard.kit.clock import ManualClock
from switchboard.linen.invoices.service import MAX_PDF_BYTES
from tests.linen.helpers import World, invoice_meta, make_pdf


async def test_keys_issue_rotate_revoke(world: World) -> None:
    portal = world.portal
    listed = (await portal.get(f"/v1/laundries/{world.laundry}/keys")).json()
    assert listed["total"] == 1
    item = listed["data"][0]
    assert "key" not in item
    assert world.key.startswith(item["prefix"])
    rotated = await portal.post(f"/v1/laundries/{world.laundry}/keys/{item['id']}/rotate")
    assert rotated.status_code == 201
    new_key = rotated.json()["key"]
    client = portal.client
    old = await client.get("/api/laundry/jobs", headers=world.laundry_headers())
    assert old.status_code == 401
    fresh = await client.get("/api/laundry/jobs", headers=world.laundry_headers(new_key))
    assert fresh.status_code == 200
    spare = await portal.made(f"/v1/laundries/{world.laundry}/keys", {"name": "office"})
    revoked = await portal.delete(f"/v1/laundries/{world.laundry}/keys/{rotated.json()['id']}")
    assert revoked.status_code == 200
    assert revoked.json()["revokedAt"] is not None
    again = await portal.delete(f"/v1/laundries/{world.laundry}/keys/{rotated.json()['id']}")
    assert (again.status_code, again.json()["error"]) == (409, "key_revoked")
    gone = await client.get("/api/laundry/jobs", headers=world.laundry_headers(new_key))
    assert gone.status_code == 401
    still = await client.get("/api/laundry/jobs", headers=world.laundry_headers(spare["key"]))
    assert still.status_code == 200
    used = (await portal.get(f"/v1/laundries/{world.laundry}/keys")).json()["data"]
    assert next(k for k in used if k["id"] == spare["id"])["lastUsedAt"] is not None


async def test_a_laundry_sees_only_its_confirmed_jobs(world: World, clock: ManualClock) -> None:
    portal = world.portal
    other = await portal.made("/v1/laundries", {"name": "Other Laundry"})
    other_key = (await portal.made(f"/v1/laundries/{other['id']}/keys", {}))["key"]
    draft = await world.sheet()
    confirmed = await world.confirmed()
    foreign = await portal.made(
        "/v1/sheets",
        {"propertyId": world.property, "laundryId": other["id"], "serviceDate": "2026-01-11",
         "lines": [{"itemTypeId": world.duvet, "qtyOrdered": 1}]},
    )  # fmt: skip
    await portal.post(f"/v1/sheets/{foreign['id']}/confirm")
    client = portal.client
    jobs = (await client.get("/api/laundry/jobs", headers=world.laundry_headers())).json()
    assert [job["id"] for job in jobs["data"]] == [confirmed["id"]]
    job = jobs["data"][0]
    assert job["property"]["deliveryNote"] == "key safe left of the door"
    assert {t["code"] for t in job["itemTypes"]} == {"DUVET_COVER_DOUBLE", "TOWEL_BATH"}
    assert "confirmedBy" not in job
    assert "notes" not in job
    # A draft, another laundry's job and no sheet at all answer the same: nothing tells which
    # sheets exist.
    report = {"lines": [{"itemTypeId": world.duvet, "qtyDelivered": 1}]}
    for hidden, key in ((draft["id"], None), (foreign["id"], None), (9999, None),
                        (confirmed["id"], other_key)):  # fmt: skip
        headers = world.laundry_headers(key)
        fetched = await client.get(f"/api/laundry/jobs/{hidden}", headers=headers)
        reported = await client.post(
            f"/api/laundry/jobs/{hidden}/delivery", json=report, headers=headers
        )
        for response in (fetched, reported):
            assert (response.status_code, response.json()) == (
                404, {"error": "not_found", "error_description": f"no job {hidden}"},
            ), hidden  # fmt: skip
    assert (await portal.get(f"/v1/sheets/{draft['id']}")).json()["status"] == "draft"
    # Polling: a cancellation after the last poll shows up, untouched jobs do not.
    seen = job["updatedAt"]
    clock.advance(120)
    await portal.post(f"/v1/sheets/{confirmed['id']}/cancel", {"reason": "booking cancelled"})
    later = await world.confirmed("2026-01-12")
    polled = await client.get(
        "/api/laundry/jobs", params={"updatedSince": "2026-01-01T12:01:00Z"},
        headers=world.laundry_headers(),
    )  # fmt: skip
    statuses = {j["id"]: j["status"] for j in polled.json()["data"]}
    assert statuses == {confirmed["id"]: "cancelled", later["id"]: "confirmed"}
    assert seen == "2026-01-01T12:00:00Z"
    bad = await client.get(
        "/api/laundry/jobs", params={"updatedSince": "yesterday"}, headers=world.laundry_headers()
    )
    assert bad.status_code == 400


async def test_delivery_report_adds_unordered_items_and_can_be_corrected(world: World) -> None:
    sheet = await world.confirmed()
    client = world.portal.client
    url = f"/api/laundry/jobs/{sheet['id']}/delivery"
    extra = await world.portal.made(
        "/v1/item-types", {"code": "BATH_MAT", "name": "Bath mat", "category": "bath"}
    )
    first = await client.post(
        url,
        json={"lines": [{"itemTypeId": world.duvet, "qtyDelivered": 1, "qtyCollected": 3},
                        {"itemTypeId": extra["id"], "qtyCollected": 2}]},
        headers=world.laundry_headers(),
    )  # fmt: skip
    assert first.status_code == 200, first.text
    lines = {line["itemTypeId"]: line for line in first.json()["lines"]}
    assert lines[extra["id"]]["qtyOrdered"] == 0
    assert lines[extra["id"]]["qtyCollected"] == 2
    assert lines[world.duvet]["balanceDue"] == 1
    corrected = await client.post(
        url, json={"lines": [{"itemTypeId": world.duvet, "qtyDelivered": 2}]},
        headers=world.laundry_headers(),
    )  # fmt: skip
    assert corrected.status_code == 200
    assert corrected.json()["status"] == "delivered"
    seen_by_admin = (await world.portal.get(f"/v1/sheets/{sheet['id']}")).json()
    assert seen_by_admin["status"] == "delivered"
    assert seen_by_admin["deliveredAt"] is not None
    assert seen_by_admin["reportedBy"] == f"laundry:{world.laundry}"
    future = await client.post(
        url,
        json={"deliveredAt": "2030-01-01T00:00:00Z",
              "lines": [{"itemTypeId": world.duvet, "qtyDelivered": 2}]},
        headers=world.laundry_headers(),
    )  # fmt: skip
    assert future.status_code == 400


async def test_delivered_at_may_be_ahead_by_the_clock_skew_only(world: World) -> None:
    """The portal's clock says 2026-01-01 12:00:00 UTC; a device may run five minutes fast."""
    sheet = await world.confirmed()
    url = f"/api/laundry/jobs/{sheet['id']}/delivery"

    async def report(delivered_at: str) -> Response:
        return await world.portal.client.post(
            url, json={"deliveredAt": delivered_at,
                       "lines": [{"itemTypeId": world.duvet, "qtyDelivered": 2}]},
            headers=world.laundry_headers(),
        )  # fmt: skip

    for late in ("2026-01-01T12:05:01Z", "2026-01-01T13:05:01+01:00", "2026-01-01T12:05:01"):
        refused = await report(late)
        assert (refused.status_code, refused.json()["error"]) == (400, "invalid_request"), late
        assert "deliveredAt" in refused.json()["error_description"]
    assert (await world.portal.get(f"/v1/sheets/{sheet['id']}")).json()["status"] == "confirmed"
    at_the_limit = await report("2026-01-01T13:05:00+01:00")
    assert at_the_limit.status_code == 200, at_the_limit.text
    assert at_the_limit.json()["deliveredAt"] == "2026-01-01T12:05:00Z"  # stored as stated
    earlier = await report("2026-01-01T11:30:00Z")
    assert earlier.json()["deliveredAt"] == "2026-01-01T11:30:00Z"


async def test_invoice_upload_links_sheets_and_moves_them_to_invoiced(world: World) -> None:
    one = await world.delivered()
    two = await world.delivered("2026-01-11")
    response = await world.upload(invoice_meta("INV-2026-001", [one["id"], two["id"]]))
    assert response.status_code == 201, response.text
    invoice = response.json()
    assert invoice["status"] == "received"
    assert invoice["source"] == "laundry-api"
    assert (invoice["net"], invoice["tax"], invoice["gross"]) == (2000, 400, 2400)
    assert invoice["pdf"]["size"] == len(make_pdf())
    assert [line["propertyId"] for line in invoice["lines"]] == [world.property] * 2
    for sheet in (one, two):
        linked = (await world.portal.get(f"/v1/sheets/{sheet['id']}")).json()
        assert (linked["status"], linked["invoiceId"]) == ("invoiced", invoice["id"])
        # An invoiced sheet takes no more delivery reports.
        late = await world.portal.client.post(
            f"/api/laundry/jobs/{sheet['id']}/delivery",
            json={"lines": [{"itemTypeId": world.duvet, "qtyDelivered": 1}]},
            headers=world.laundry_headers(),
        )
        assert late.status_code == 409
        for action in ("cancel", "confirm"):
            refused = await world.portal.post(f"/v1/sheets/{sheet['id']}/{action}")
            assert (refused.status_code, refused.json()["error"]) == (409, "invalid_transition")
        edit = await world.portal.patch(f"/v1/sheets/{sheet['id']}", {"notes": "x"})
        assert edit.status_code == 409
    pdf = await world.portal.client.get(
        f"/api/v1/invoices/{invoice['id']}/pdf", headers=await world.portal.auth("user")
    )
    assert pdf.status_code == 200
    assert pdf.headers["content-type"] == "application/pdf"
    assert pdf.content == make_pdf()
    own = await world.portal.client.get("/api/laundry/invoices", headers=world.laundry_headers())
    assert [i["invoiceNumber"] for i in own.json()["data"]] == ["INV-2026-001"]


async def test_upload_rejections_change_nothing(world: World) -> None:
    delivered = await world.delivered()
    confirmed = await world.confirmed("2026-01-12")
    cases = [
        (invoice_meta("A-1", [delivered["id"]]), b"hello, not a pdf", 415, "not_a_pdf"),
        (invoice_meta("A-1", [delivered["id"]]), b"%PDF-1.4\nno trailer", 415, "not_a_pdf"),
        (invoice_meta("A-1", [delivered["id"]]), make_pdf()[:-30] + b"startxref\n3\n%%EOF\n",
         415, "not_a_pdf"),
        (invoice_meta("A-1", [confirmed["id"]]), None, 409, "sheet_not_invoiceable"),
        (invoice_meta("A-1", [9999]), None, 400, "unknown_reference"),
        ({**invoice_meta("A-1", [delivered["id"]]), "gross": 1}, None, 400, "amounts_mismatch"),
        ({**invoice_meta("A-1", []), "net": 1000, "tax": 0, "gross": 1000}, None, 400,
         "amounts_mismatch"),
        ({**invoice_meta("A-1", [delivered["id"]]), "net": 1500, "tax": 0, "gross": 1500}, None,
         400, "amounts_mismatch"),
        ({**invoice_meta("A-1", [delivered["id"]]), "net": -5}, None, 400, "invalid_request"),
        ({**invoice_meta("A-1", [delivered["id"]]), "currency": "euro"}, None, 400,
         "invalid_request"),
    ]  # fmt: skip
    for meta, pdf, status, code in cases:
        response = await world.upload(meta, pdf)
        assert (response.status_code, response.json()["error"]) == (status, code), meta
    oversized = await world.upload(
        invoice_meta("A-1", [delivered["id"]]), make_pdf() + b"0" * MAX_PDF_BYTES
    )
    assert oversized.status_code == 413
    assert (await world.portal.get("/v1/invoices")).json()["total"] == 0
    sheet = (await world.portal.get(f"/v1/sheets/{delivered['id']}")).json()
    assert (sheet["status"], sheet["invoiceId"]) == ("delivered", None)
    missing_part = await world.portal.client.post(
        "/api/laundry/invoices", files={"file": ("a.pdf", make_pdf(), "application/pdf")},
        headers=world.laundry_headers(),
    )  # fmt: skip
    assert missing_part.status_code == 400
    as_json = await world.portal.client.post(
        "/api/laundry/invoices", json={}, headers=world.laundry_headers()
    )
    assert as_json.status_code == 415


async def test_duplicate_invoice_number_is_409_per_laundry(world: World) -> None:
    first = await world.upload(invoice_meta("INV-9", []))
    assert first.status_code == 201
    duplicate = await world.upload(invoice_meta("INV-9", []))
    assert (duplicate.status_code, duplicate.json()["error"]) == (409, "duplicate_invoice")
    other = await world.portal.made("/v1/laundries", {"name": "Other"})
    other_key = (await world.portal.made(f"/v1/laundries/{other['id']}/keys", {}))["key"]
    same_number_elsewhere = await world.upload(invoice_meta("INV-9", []), key=other_key)
    assert same_number_elsewhere.status_code == 201
    # Each laundry lists and reads only its own invoices.
    theirs = same_number_elsewhere.json()["id"]
    hidden = await world.portal.client.get(
        f"/api/laundry/invoices/{theirs}", headers=world.laundry_headers()
    )
    assert hidden.status_code == 404
    hidden_pdf = await world.portal.client.get(
        f"/api/laundry/invoices/{theirs}/pdf", headers=world.laundry_headers()
    )
    assert hidden_pdf.status_code == 404


async def test_invoice_states(world: World) -> None:
    portal = world.portal
    invoice = (await world.upload(invoice_meta("S-1", []))).json()
    url = f"/v1/invoices/{invoice['id']}"
    paid_early = await portal.post(f"{url}/pay")
    assert (paid_early.status_code, paid_early.json()["error"]) == (409, "invalid_transition")
    no_reason = await portal.post(f"{url}/dispute", {})
    assert no_reason.status_code == 400
    disputed = await portal.post(f"{url}/dispute", {"reason": "wrong count"})
    assert (disputed.json()["status"], disputed.json()["disputeReason"]) == (
        "disputed", "wrong count",
    )  # fmt: skip
    approved = await portal.post(f"{url}/approve")
    assert (approved.json()["status"], approved.json()["approvedBy"]) == ("approved", "admin")
    paid = await portal.post(f"{url}/pay", {"paymentRef": "SEPA-1"})
    assert (paid.json()["status"], paid.json()["paymentRef"]) == ("paid", "SEPA-1")
    for action in ("approve", "dispute", "pay"):
        body = {"reason": "x"} if action == "dispute" else None
        refused = await portal.post(f"{url}/{action}", body)
        assert (refused.status_code, refused.json()["error"]) == (409, "invalid_transition")
    listed = await portal.get("/v1/invoices", status="paid", laundryId=world.laundry)
    assert listed.json()["total"] == 1
    assert (await portal.get("/v1/invoices", status="received")).json()["total"] == 0
    # received -> approved directly; approved -> disputed; disputed -> approved again.
    other = (await world.upload(invoice_meta("S-3", []))).json()
    second = f"/v1/invoices/{other['id']}"
    assert (await portal.post(f"{second}/approve")).json()["status"] == "approved"
    reopened = await portal.post(f"{second}/dispute", {"reason": "price"})
    assert reopened.json()["status"] == "disputed"
    assert (await portal.post(f"{second}/pay")).status_code == 409
    assert (await portal.post(f"{second}/approve")).json()["status"] == "approved"
    # Filters by property and group follow the invoice's lines.
    sheet = await world.delivered()
    linked = (await world.upload(invoice_meta("S-2", [sheet["id"]]))).json()
    group = await portal.made("/v1/groups", {"name": "G", "kind": "owner",
                                             "propertyIds": [world.property]})  # fmt: skip
    for params in ({"propertyId": world.property}, {"groupId": group["id"]}):
        found = (await portal.get("/v1/invoices", **params)).json()["data"]
        assert [i["id"] for i in found] == [linked["id"]], params
    assert (await portal.post("/v1/invoices/999/approve")).status_code == 404


async def test_admin_records_an_invoice_received_by_mail(world: World) -> None:
    sheet = await world.delivered()
    meta = {**invoice_meta("MAIL-1", [sheet["id"]]), "laundryId": world.laundry}
    import json

    response = await world.portal.client.post(
        "/api/v1/invoices",
        files={"file": ("scan.pdf", make_pdf(), "application/pdf"),
               "metadata": (None, json.dumps(meta), "application/json")},
        headers=await world.portal.auth("admin"),
    )  # fmt: skip
    assert response.status_code == 201, response.text
    assert response.json()["source"] == "admin"
    refused = await world.portal.client.post(
        "/api/v1/invoices",
        files={"file": ("scan.pdf", make_pdf(), "application/pdf"),
               "metadata": (None, json.dumps(meta), "application/json")},
        headers=await world.portal.auth("power"),
    )  # fmt: skip
    assert refused.status_code == 403
    no_lines = {**invoice_meta("MAIL-2", []), "laundryId": world.laundry, "net": 900,
                "tax": 0, "gross": 900}  # fmt: skip
    mismatch = await world.portal.client.post(
        "/api/v1/invoices",
        files={"file": ("scan.pdf", make_pdf(), "application/pdf"),
               "metadata": (None, json.dumps(no_lines), "application/json")},
        headers=await world.portal.auth("admin"),
    )  # fmt: skip
    assert (mismatch.status_code, mismatch.json()["error"]) == (400, "amounts_mismatch")
    assert (await world.portal.get("/v1/invoices")).json()["total"] == 1


def property_lines(number: str, *property_ids: int) -> dict[str, object]:
    """An invoice of one 10.00 line per property, with no sheet."""
    lines = [
        {"propertyId": pid, "description": "extra towels", "qty": 1, "unitPrice": 1000,
         "net": 1000}
        for pid in property_ids
    ]  # fmt: skip
    net = 1000 * len(property_ids)
    return {**invoice_meta(number, []), "lines": lines, "net": net, "tax": 0, "gross": net}


async def test_a_laundry_invoices_only_the_properties_it_serves(world: World) -> None:
    """A line without a sheet may name the laundry's own properties: those whose default it is
    or it has had a sheet of. Another property of the tenant is refused in the very words of
    an id that does not exist, so a laundry learns no other property's id (decision 0521)."""
    portal = world.portal
    other = await portal.made("/v1/laundries", {"name": "Other Laundry"})
    theirs = await portal.made("/v1/properties", {"code": "HILL-02", "name": "Hill House",
                                                  "defaultLaundryId": other["id"]})  # fmt: skip
    served_once = await portal.made("/v1/properties", {"code": "PARK-03", "name": "Park Flat"})
    await portal.made(
        "/v1/sheets",
        {"propertyId": served_once["id"], "laundryId": world.laundry, "serviceDate": "2026-01-11",
         "lines": [{"itemTypeId": world.duvet, "qtyOrdered": 1}]},
    )  # fmt: skip
    refused = await world.upload(property_lines("P-1", world.property, theirs["id"]))
    unknown = await world.upload(property_lines("P-1", world.property, 99999))
    assert (refused.status_code, refused.json()["error"]) == (400, "unknown_reference")
    assert refused.json()["error_description"] == unknown.json()["error_description"].replace(
        "99999", str(theirs["id"])
    )
    assert (await portal.get("/v1/invoices")).json()["total"] == 0
    accepted = await world.upload(property_lines("P-1", world.property, served_once["id"]))
    assert accepted.status_code == 201, accepted.text
    lines = accepted.json()["lines"]
    assert [line["propertyId"] for line in lines] == [world.property, served_once["id"]]
    # An admin records what arrived by mail, for any property of the tenant.
    meta = {**property_lines("MAIL-3", theirs["id"]), "laundryId": world.laundry}
    by_mail = await portal.client.post(
        "/api/v1/invoices",
        files={"file": ("scan.pdf", make_pdf(), "application/pdf"),
               "metadata": (None, orjson.dumps(meta).decode(), "application/json")},
        headers=await portal.auth("admin"),
    )  # fmt: skip
    assert by_mail.status_code == 201, by_mail.text
