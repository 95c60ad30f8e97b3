"""The sheet actions of the web app over HTTP: re-issuing a confirmed sheet as a new draft, and
a new sheet from a property's par levels for a laundry of one's choice."""

from __future__ import annotations

from httpx import AsyncClient

from tests.console.signin import csrf_of
from tests.linen.helpers import World
from tests.linen.web.test_pages_http import DAY, web_sign_in


async def test_a_confirmed_sheet_is_reissued_as_a_draft_copy(
    app_client: AsyncClient, world: World
) -> None:
    portal = world.portal
    sheet = await world.sheet(
        DAY, pickupDate="2026-01-11", bookingRef="BK-77", guestCount=4, notes="late check-out",
        reason="restock",
    )  # fmt: skip
    assert (await portal.post(f"/v1/sheets/{sheet['id']}/confirm")).status_code == 200
    await web_sign_in(app_client, "admin")
    page = await app_client.get(f"/app/sheets/{sheet['id']}")
    assert f'action="/app/sheets/{sheet["id"]}/reissue"' in page.text
    reissued = await app_client.post(
        f"/app/sheets/{sheet['id']}/reissue", data={"csrf": csrf_of(page.text)}
    )
    assert reissued.status_code == 303, reissued.text
    new_id = int(reissued.headers["location"].rsplit("/", 1)[1])
    assert new_id != sheet["id"]

    old = (await portal.get(f"/v1/sheets/{sheet['id']}")).json()
    assert (old["status"], old["cancelReason"]) == ("cancelled", "re-issued")
    new = (await portal.get(f"/v1/sheets/{new_id}")).json()
    assert new["status"] == "draft"
    assert new["number"] != old["number"]
    copied = ("propertyId", "laundryId", "serviceDate", "pickupDate", "reason", "bookingRef",
              "guestCount", "notes")  # fmt: skip
    assert {k: new[k] for k in copied} == {k: old[k] for k in copied}
    assert [(x["itemTypeId"], x["qtyOrdered"]) for x in new["lines"]] == [
        (world.duvet, 2), (world.towel, 4),
    ]  # fmt: skip

    landing = await app_client.get(reissued.headers["location"])
    assert landing.status_code == 200
    assert new["number"] in landing.text
    assert 'id="edit-lines"' in landing.text  # a draft: its lines are edited here
    assert f'name="qty_{world.towel}" value="4"' in landing.text


async def test_a_delivered_sheet_is_not_reissued(app_client: AsyncClient, world: World) -> None:
    sheet = await world.delivered(DAY)
    await web_sign_in(app_client, "admin")
    page = await app_client.get(f"/app/sheets/{sheet['id']}")
    assert "/reissue" not in page.text
    refused = await app_client.post(
        f"/app/sheets/{sheet['id']}/reissue", data={"csrf": csrf_of(page.text)}
    )
    assert refused.status_code == 409
    listed = (await world.portal.get("/v1/sheets")).json()["data"]
    assert [(s["id"], s["status"]) for s in listed] == [(sheet["id"], "delivered")]
