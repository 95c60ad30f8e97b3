"""The linen web app over HTTP: sign-in per role, a turnover day, refusals, the vault audit and
the PDFs (their text read back with pypdf)."""

from __future__ import annotations

import io
import re
from urllib.parse import quote, urlencode

import pytest
from httpx import AsyncClient
from pypdf import PdfReader

from switchboard.runtime import Runtime
from tests import factories
from tests.console.signin import console_clients, csrf_of, sign_in
from tests.linen.helpers import Portal, World, invoice_meta

DAY = "2026-01-10"


async def web_sign_in(client: AsyncClient, username: str, *, switch: bool = False) -> None:
    answer = await sign_in(client, username, switch=switch, mount="/app")
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == "/app/today"


def pdf_text(body: bytes) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(body)).pages)


async def test_a_stranger_is_sent_to_the_sign_in(app_client: AsyncClient) -> None:
    for path in ("/app/today", "/app/properties", "/app/invoices", "/app/sheets/1"):
        response = await app_client.get(path)
        assert response.status_code == 303
        assert response.headers["location"] == f"/app/login?next={quote(path, safe='')}"


async def test_the_page_asked_for_is_shown_after_the_sign_in(
    app_client: AsyncClient, world: World
) -> None:
    asked = await app_client.get("/app/invoices", params={"month": "2026-01"})
    done = await sign_in(app_client, "admin", mount="/app", login=asked.headers["location"])
    assert (done.status_code, done.headers["location"]) == (303, "/app/invoices?month=2026-01")
    # only the linen app's own pages: not the console's, not another host's
    for elsewhere in ("/admin/calls", "https://evil.example.com/app/today", "//evil.example.com"):
        start = f"/app/login?{urlencode({'next': elsewhere})}"
        done = await sign_in(app_client, "admin", mount="/app", login=start)
        assert (done.status_code, done.headers["location"]) == (303, "/app/today"), elsewhere


async def test_every_role_signs_in_and_reads(app_client: AsyncClient, world: World) -> None:
    for number, username in enumerate(("admin", "power", "user")):
        await web_sign_in(app_client, username, switch=number > 0)
        page = await app_client.get("/app/properties")
        assert page.status_code == 200
        assert "SEA-01" in page.text
        assert f'<span class="user">{username}' in page.text
        assert "content-security-policy" in page.headers
        detail = await app_client.get(f"/app/properties/{world.property}")
        assert "key safe left of the door" in detail.text
        writes = ("New sheet from par levels" in detail.text, "/edit" in detail.text)
        assert writes == ((True, True) if username == "admin" else (False, False))


async def test_a_turnover_day_end_to_end(app_client: AsyncClient, world: World) -> None:
    portal = world.portal
    await web_sign_in(app_client, "admin")
    detail = await app_client.get(f"/app/properties/{world.property}")
    csrf = csrf_of(detail.text)
    made = await app_client.post(
        "/app/sheets",
        data={"csrf": csrf, "property_id": str(world.property), "service_date": DAY},
    )
    assert made.status_code == 303, made.text
    sheet_url = made.headers["location"]
    sheet_id = int(sheet_url.rsplit("/", 1)[1])
    draft = await app_client.get(sheet_url)
    assert f'name="qty_{world.duvet}" value="2"' in draft.text  # from the par levels
    assert f'name="qty_{world.towel}" value="4"' in draft.text
    edited = await app_client.post(
        f"{sheet_url}/lines",
        data={"csrf": csrf, f"qty_{world.duvet}": "3", f"qty_{world.towel}": "4"},
    )
    assert edited.status_code == 303
    confirmed = await app_client.post(f"{sheet_url}/confirm", data={"csrf": csrf})
    assert confirmed.status_code == 303
    api = (await portal.get(f"/v1/sheets/{sheet_id}")).json()
    assert api["status"] == "confirmed"
    assert [line["qtyOrdered"] for line in api["lines"]] == [3, 4]

    today = await app_client.get("/app/today", params={"date": DAY})
    assert api["number"] in today.text
    assert "Blanc Laundry" in today.text

    reported = await app_client.post(
        f"/api/laundry/jobs/{sheet_id}/delivery",
        json={"lines": [
            {"itemTypeId": world.duvet, "qtyDelivered": 3, "qtyCollected": 2, "qtyRejected": 1},
            {"itemTypeId": world.towel, "qtyDelivered": 4, "qtyCollected": 5}]},
        headers=world.laundry_headers(),
    )  # fmt: skip
    assert reported.status_code == 200, reported.text
    shown = await app_client.get(sheet_url)
    row = re.search(r'data-item="DUVET_COVER_DOUBLE">(.*?)</tr>', shown.text, re.S)
    assert row is not None
    cells = re.findall(r'class="(delivered|collected|rejected|balance)">(\d+)<', row.group(1))
    assert dict(cells) == {"delivered": "3", "collected": "2", "rejected": "1", "balance": "1"}

    waiting = await app_client.get("/app/invoices")
    section = waiting.text.split('id="not-invoiced"')[1].split("</section>")[0]
    assert api["number"] in section
    uploaded = await world.upload(invoice_meta("INV-7", [sheet_id]))
    assert uploaded.status_code == 201, uploaded.text
    invoice_id = uploaded.json()["id"]
    reconciled = await app_client.get("/app/invoices")
    section = reconciled.text.split('id="not-invoiced"')[1].split("</section>")[0]
    assert api["number"] not in section
    assert "INV-7" in reconciled.text
    approved = await app_client.post(f"/app/invoices/{invoice_id}/approve", data={"csrf": csrf})
    assert approved.status_code == 303
    assert (await portal.get(f"/v1/invoices/{invoice_id}")).json()["status"] == "approved"
    pdf = await app_client.get(f"/app/invoices/{invoice_id}/pdf", params={"download": "1"})
    assert pdf.headers["content-type"] == "application/pdf"
    assert pdf.headers["content-disposition"].startswith("attachment")


async def test_read_only_roles_are_refused_when_they_post(
    app_client: AsyncClient, world: World
) -> None:
    sheet = await world.sheet(DAY)
    for number, username in enumerate(("power", "user")):
        await web_sign_in(app_client, username, switch=number > 0)
        page = await app_client.get(f"/app/sheets/{sheet['id']}")
        assert "/confirm" not in page.text
        assert 'name="qty_' not in page.text
        csrf = csrf_of(page.text)
        for path, data in (
            (f"/app/sheets/{sheet['id']}/confirm", {}),
            (f"/app/sheets/{sheet['id']}/cancel", {"reason": "x"}),
            ("/app/sheets", {"property_id": str(world.property), "service_date": DAY}),
            (f"/app/properties/{world.property}", {"code": "X", "name": "X"}),
        ):
            refused = await app_client.post(path, data={"csrf": csrf, **data})
            assert refused.status_code == 403, (username, path)
        for path in ("/app/properties/new", f"/app/properties/{world.property}/edit"):
            assert (await app_client.get(path)).status_code == 403, (username, path)
    assert (await world.portal.get(f"/v1/sheets/{sheet['id']}")).json()["status"] == "draft"
    # Without the session's CSRF token even an admin's post is refused.
    await web_sign_in(app_client, "admin", switch=True)
    forged = await app_client.post(f"/app/sheets/{sheet['id']}/confirm", data={"csrf": "x"})
    assert forged.status_code == 403


async def test_a_vault_reveal_is_confirmed_and_audited(
    app_client: AsyncClient, world: World
) -> None:
    entry = await world.portal.made(
        "/v1/vault",
        {"propertyId": world.property, "kind": "key-safe", "label": "Key safe", "secret": "4711"},
    )
    await web_sign_in(app_client, "user")
    masked = await app_client.get(f"/app/vault/{entry['id']}")
    assert "4711" not in masked.text
    assert 'id="reveal"' not in masked.text
    refused = await app_client.post(
        f"/app/vault/{entry['id']}/reveal", data={"csrf": csrf_of(masked.text), "confirm": "1"}
    )
    assert refused.status_code == 403
    await web_sign_in(app_client, "power", switch=True)
    page = await app_client.get(f"/app/vault/{entry['id']}")
    assert "4711" not in page.text
    assert 'id="reveal"' in page.text
    assert 'id="audit"' not in page.text  # the trail is for admins
    shown = await app_client.post(
        f"/app/vault/{entry['id']}/reveal", data={"csrf": csrf_of(page.text), "confirm": "1"}
    )
    assert shown.status_code == 303
    assert "4711" in (await app_client.get(shown.headers["location"])).text
    await web_sign_in(app_client, "admin", switch=True)
    audit = await app_client.get(f"/app/vault/{entry['id']}")
    trail = audit.text.split('id="audit"')[1]
    assert "<td>power</td><td>power-user</td>" in trail


async def test_a_reveal_without_the_confirmation_reveals_and_logs_nothing(
    app_client: AsyncClient, world: World
) -> None:
    entry = await world.portal.made(
        "/v1/vault",
        {"propertyId": world.property, "kind": "alarm", "label": "Alarm", "secret": "8642"},
    )
    for number, username in enumerate(("power", "admin")):
        await web_sign_in(app_client, username, switch=number > 0)
        page = await app_client.get(f"/app/vault/{entry['id']}")
        csrf = csrf_of(page.text)
        for unticked in ({"csrf": csrf}, {"csrf": csrf, "other": "1"}):
            refused = await app_client.post(f"/app/vault/{entry['id']}/reveal", data=unticked)
            assert refused.status_code == 400, username
            assert "8642" not in refused.text
            assert 'id="reveal-problem"' in refused.text  # the form again, saying why
            assert 'id="reveal"' in refused.text
    log = await world.portal.get(f"/v1/vault/{entry['id']}/reveals")
    assert log.json()["data"] == []


async def test_the_pdfs_carry_the_lines(app_client: AsyncClient, world: World) -> None:
    await world.delivered(DAY)
    sheet = (await world.portal.get("/v1/sheets")).json()["data"][0]
    await web_sign_in(app_client, "user")
    control = await app_client.get(f"/app/sheets/{sheet['id']}/control.pdf")
    assert control.status_code == 200
    assert control.headers["content-type"] == "application/pdf"
    text = pdf_text(control.content)
    assert sheet["number"] in text
    assert "Duvet cover double" in text
    assert "Bath towel" in text
    assert "key safe left of the door" in text
    packing = await app_client.get("/app/today/packing.pdf", params={"date": DAY})
    text = pdf_text(packing.content)
    assert "SEA-01 Sea View" in text
    assert re.search(r"Bath towel\s*4", text), text


async def test_set_components_are_expanded_on_the_packing_list(
    app_client: AsyncClient, world: World, portal: Portal
) -> None:
    _, bed_set = await world.bed_set()
    sheet = await portal.made(
        "/v1/sheets",
        {"propertyId": world.property, "serviceDate": DAY,
         "lines": [{"itemTypeId": bed_set["id"], "qtyOrdered": 2}]},
    )  # fmt: skip
    assert (await portal.post(f"/v1/sheets/{sheet['id']}/confirm")).status_code == 200
    await web_sign_in(app_client, "admin")
    page = await app_client.get("/app/today", params={"date": DAY})
    packing = page.text.split('id="packing"')[1]
    assert "<span>Pillowcase</span> <strong>4</strong>" in packing
    assert "<span>Duvet cover double</span> <strong>2</strong>" in packing
    assert "Double bed set" not in packing


async def test_the_day_pager_is_one_block_with_its_day_picker(
    app_client: AsyncClient, world: World
) -> None:
    await web_sign_in(app_client, "user")
    page = await app_client.get("/app/today", params={"date": DAY})
    pager = re.search(r'<nav class="pager"[^>]*>(.*?)</nav>', page.text, re.S)
    assert pager is not None
    assert 'href="/app/today?date=2026-01-09"' in pager.group(1)
    assert '<form method="get" action="/app/today">' in pager.group(1)
    assert 'href="/app/today?date=2026-01-11"' in pager.group(1)
    # A <form> may not sit in a <p>: the browser would close the paragraph before it.
    assert not re.search(r"<p\b[^>]*>(?:(?!</p>).)*<form", page.text, re.S)


@pytest.mark.parametrize(("day", "gone"), [("2000-01-01", "previous"), ("2099-12-31", "next")])
async def test_the_pager_links_no_day_outside_the_range(
    app_client: AsyncClient, world: World, day: str, gone: str
) -> None:
    """At the first and the last day the portal takes (decision 0520) the pager offers no link
    past it, and its picker is bounded the same way; every link it does offer answers."""
    await web_sign_in(app_client, "user")
    page = await app_client.get("/app/today", params={"date": day})
    assert page.status_code == 200
    assert f'class="{gone}"' not in page.text
    assert 'min="2000-01-01" max="2099-12-31"' in page.text
    for link in re.findall(r'href="(/app/today\?date=[0-9-]+)"', page.text):
        assert (await app_client.get(link)).status_code == 200, link


async def test_a_session_is_good_on_its_own_tenants_host_only(
    app_client: AsyncClient, world: World, runtime: Runtime
) -> None:
    globex = await factories.tenant(runtime, "globex", ["globex.test"])
    await console_clients(runtime, globex)
    await web_sign_in(app_client, "admin")
    assert (await app_client.get("/app/properties")).status_code == 200
    cookie = app_client.cookies.get("sb_linen")
    assert cookie
    elsewhere = await app_client.get(
        "/app/properties", headers={"Host": "globex.test", "Cookie": f"sb_linen={cookie}"}
    )
    assert elsewhere.status_code == 303
    assert elsewhere.headers["location"] == "/app/login?next=%2Fapp%2Fproperties"


async def test_a_day_outside_the_range_is_a_400_page_like_one_not_a_date(
    app_client: AsyncClient, world: World
) -> None:
    """Days from 2000-01-01 to 2099-12-31 (decision 0520); the pages count six days on, and
    the pager one either side, from the first and the last."""
    await web_sign_in(app_client, "user")
    for day in ("9999-12-31", "9999-12-28", "0001-01-01", "2100-01-01", "1999-12-31"):
        for path in ("/app/today", "/app/today/packing.pdf"):
            refused = await app_client.get(path, params={"date": day})
            assert refused.status_code == 400, (path, day)
            assert "must be a date from 2000-01-01 to 2099-12-31" in refused.text, (path, day)
    garbage = await app_client.get("/app/today", params={"date": "garbage"})
    assert garbage.status_code == 400
    assert "expected YYYY-MM-DD" in garbage.text
    for day in ("2000-01-01", "2099-12-31"):
        assert (await app_client.get("/app/today", params={"date": day})).status_code == 200
        packing = await app_client.get("/app/today/packing.pdf", params={"date": day})
        assert packing.status_code == 200
        assert f"Packing list {day}" in pdf_text(packing.content)
