"""Destructive actions of the web app ask first: deleting a price list, revoking a laundry key
and deleting a vault entry each answer with a confirmation page, and only its form (posting
``confirmed=yes``) carries them out."""

from __future__ import annotations

from typing import Any

from httpx import AsyncClient

from tests.console.signin import csrf_of
from tests.linen.helpers import World
from tests.linen.web.html_forms import form_fields
from tests.linen.web.test_pages_http import DAY, web_sign_in


async def _asked(client: AsyncClient, action: str, csrf: str, back: str) -> dict[str, Any]:
    """Post the button's form; the answer must be the question, changing nothing yet. The
    fields its confirming form would post."""
    asked = await client.post(action, data={"csrf": csrf})
    assert asked.status_code == 200, asked.text
    assert 'id="confirm"' in asked.text
    assert f'<a class="button" href="{back}">Cancel</a>' in asked.text
    fields = form_fields(asked.text, "confirm")
    assert fields["confirmed"] == ["yes"]
    assert f'action="{action}"' in asked.text
    return {"text": asked.text, "fields": fields}


async def test_a_price_list_is_deleted_after_a_confirmation(
    app_client: AsyncClient, world: World
) -> None:
    sheet = await world.confirmed(DAY)
    assert sheet["estimatedCost"] is not None
    (prices,) = (await world.portal.get(f"/v1/laundries/{world.laundry}/price-lists")).json()[
        "data"
    ]
    await web_sign_in(app_client, "admin")
    page = await app_client.get(f"/app/laundries/{world.laundry}")
    action = f"/app/laundries/{world.laundry}/prices/{prices['id']}/delete"
    assert f'action="{action}"' in page.text
    asked = await _asked(
        app_client, action, csrf_of(page.text), f"/app/laundries/{world.laundry}#price-lists"
    )
    assert "Delete the price list of Blanc Laundry?" in asked["text"]
    assert "re-estimated" in asked["text"]
    still = await world.portal.get(f"/v1/laundries/{world.laundry}/price-lists")
    assert len(still.json()["data"]) == 1
    assert (await world.portal.get(f"/v1/sheets/{sheet['id']}")).json()["estimatedCost"]

    done = await app_client.post(action, data=asked["fields"])
    assert done.status_code == 303
    gone = await world.portal.get(f"/v1/laundries/{world.laundry}/price-lists")
    assert gone.json()["data"] == []
    assert (await world.portal.get(f"/v1/sheets/{sheet['id']}")).json()["estimatedCost"] is None


async def test_a_laundry_key_is_revoked_after_a_confirmation(
    app_client: AsyncClient, world: World
) -> None:
    await web_sign_in(app_client, "admin")
    (key,) = (await world.portal.get(f"/v1/laundries/{world.laundry}/keys")).json()["data"]
    page = await app_client.get(f"/app/laundries/{world.laundry}")
    action = f"/app/laundries/{world.laundry}/keys/{key['id']}/revoke"
    asked = await _asked(
        app_client, action, csrf_of(page.text), f"/app/laundries/{world.laundry}#keys"
    )
    assert f"Revoke the key {key['prefix']}\u2026 of Blanc Laundry?" in asked["text"]
    jobs = await app_client.get("/api/laundry/jobs", headers=world.laundry_headers())
    assert jobs.status_code == 200  # not revoked yet

    done = await app_client.post(action, data=asked["fields"])
    assert done.status_code == 303
    jobs = await app_client.get("/api/laundry/jobs", headers=world.laundry_headers())
    assert jobs.status_code == 401
    again = await app_client.post(action, data={"csrf": csrf_of(page.text)})
    assert again.status_code == 409  # nothing left to ask about


async def test_a_vault_entry_is_deleted_after_a_confirmation(
    app_client: AsyncClient, world: World
) -> None:
    entry = await world.portal.made(
        "/v1/vault", {"propertyId": world.property, "kind": "wifi", "label": "Wifi", "secret": "s"}
    )
    await web_sign_in(app_client, "admin")
    page = await app_client.get(f"/app/vault/{entry['id']}")
    action = f"/app/vault/{entry['id']}/delete"
    asked = await _asked(app_client, action, csrf_of(page.text), f"/app/vault/{entry['id']}")
    assert "Delete the vault entry Wifi?" in asked["text"]
    assert (await world.portal.get(f"/v1/vault/{entry['id']}")).status_code == 200

    done = await app_client.post(action, data=asked["fields"])
    assert done.status_code == 303
    assert done.headers["location"] == f"/app/properties/{world.property}"
    assert (await world.portal.get(f"/v1/vault/{entry['id']}")).status_code == 404
