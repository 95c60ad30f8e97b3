"""The linen web app's one-time results over HTTP (decision 0602): issuing or rotating a laundry
key and revealing a vault secret answer 303; the page shows the secret once, and a reload
shows the plain page, issues no key and writes no second audit row."""

from __future__ import annotations

import re

from httpx import AsyncClient, Response

from tests.console.signin import csrf_of
from tests.linen.helpers import World
from tests.linen.web.test_pages_http import web_sign_in

FLASH = "sb_linen_flash"


def secret_of(page: str) -> str | None:
    found = re.search(r"data-secret>([^<]+)<", page)
    return found.group(1) if found else None


def flash_set(response: Response) -> str:
    return next(c for c in response.headers.get_list("set-cookie") if c.startswith(f"{FLASH}="))


async def _keys(world: World) -> list[dict[str, object]]:
    listed = await world.portal.get(f"/v1/laundries/{world.laundry}/keys")
    data: list[dict[str, object]] = listed.json()["data"]
    return data


async def test_an_issued_or_rotated_key_is_shown_once(
    app_client: AsyncClient, world: World
) -> None:
    await web_sign_in(app_client, "admin")
    page = f"/app/laundries/{world.laundry}"
    token = csrf_of((await app_client.get(page)).text)
    issued = await app_client.post(f"{page}/keys", data={"csrf": token, "name": "van 2"})
    assert issued.status_code == 303
    assert issued.headers["location"] == page
    cookie = flash_set(issued)
    for attribute in ("HttpOnly", "SameSite=lax", "Path=/app", "Max-Age=300"):
        assert attribute in cookie
    shown = await app_client.get(page)
    key = secret_of(shown.text)
    assert key is not None
    assert key not in cookie
    assert "(van 2)" in shown.text
    assert shown.headers["cache-control"] == "no-store"
    reloaded = await app_client.get(page)
    assert secret_of(reloaded.text) is None
    assert len(await _keys(world)) == 2  # the world's key and this one: none on the reload
    jobs = await app_client.get("/api/laundry/jobs", headers=world.laundry_headers(key))
    assert jobs.status_code == 200

    key_id = re.findall(r"/keys/(\d+)/rotate", reloaded.text)[-1]
    rotated = await app_client.post(f"{page}/keys/{key_id}/rotate", data={"csrf": token})
    assert rotated.status_code == 303
    assert rotated.headers["location"] == page
    fresh = secret_of((await app_client.get(page)).text)
    assert fresh is not None
    assert fresh != key
    assert secret_of((await app_client.get(page)).text) is None
    assert len(await _keys(world)) == 3  # the rotated key (revoked) stays listed
    jobs = await app_client.get("/api/laundry/jobs", headers=world.laundry_headers(fresh))
    assert jobs.status_code == 200  # the reload did not rotate it again


async def test_a_reveal_is_shown_once_and_audited_once(
    app_client: AsyncClient, world: World
) -> None:
    entry = await world.portal.made(
        "/v1/vault",
        {"propertyId": world.property, "kind": "key-safe", "label": "Key safe", "secret": "4711"},
    )
    page = f"/app/vault/{entry['id']}"
    await web_sign_in(app_client, "power")
    token = csrf_of((await app_client.get(page)).text)
    revealed = await app_client.post(f"{page}/reveal", data={"csrf": token, "confirm": "1"})
    assert revealed.status_code == 303
    assert revealed.headers["location"] == page
    assert "4711" not in revealed.text
    assert "4711" not in flash_set(revealed)
    shown = await app_client.get(page)
    assert secret_of(shown.text) == "4711"
    reloaded = await app_client.get(page)
    assert secret_of(reloaded.text) is None
    assert "4711" not in reloaded.text
    assert 'id="reveal"' in reloaded.text  # the form again, to reveal (and log) anew
    log = await world.portal.get(f"/v1/vault/{entry['id']}/reveals")
    assert len(log.json()["data"]) == 1


async def test_a_reveal_is_not_shown_to_another_session_nor_after_a_new_secret(
    app_client: AsyncClient, world: World
) -> None:
    entry = await world.portal.made(
        "/v1/vault",
        {"propertyId": world.property, "kind": "alarm", "label": "Alarm", "secret": "8642"},
    )
    page = f"/app/vault/{entry['id']}"
    await web_sign_in(app_client, "power")
    token = csrf_of((await app_client.get(page)).text)
    revealed = await app_client.post(f"{page}/reveal", data={"csrf": token, "confirm": "1"})
    assert revealed.status_code == 303
    # The browser signs in anew (as another user) before the redirect is followed: the
    # flash still in its cookies was sealed for the session before.
    await web_sign_in(app_client, "admin", switch=True)
    other = await app_client.get(page)
    assert other.status_code == 200
    assert secret_of(other.text) is None
    assert "8642" not in other.text

    token = csrf_of(other.text)
    revealed = await app_client.post(f"{page}/reveal", data={"csrf": token, "confirm": "1"})
    assert revealed.status_code == 303
    changed = await world.portal.patch(f"/v1/vault/{entry['id']}", {"secret": "1357"})
    assert changed.status_code == 200, changed.text
    # The secret changed between the reveal and the page: the new one is not shown (it was
    # never revealed), nor the old one.
    after = await app_client.get(page)
    assert secret_of(after.text) is None
    assert "1357" not in after.text
    assert "8642" not in after.text
    log = await world.portal.get(f"/v1/vault/{entry['id']}/reveals")
    assert [row["username"] for row in log.json()["data"]] == ["admin", "power"]


async def test_a_copy_of_the_reveals_flash_cookie_shows_the_secret_no_more(
    app_client: AsyncClient, world: World
) -> None:
    """The flash of a reveal is read once: the same cookie sent again within its 5 minutes
    shows the masked entry, and the only audit row is the reveal's."""
    entry = await world.portal.made(
        "/v1/vault",
        {"propertyId": world.property, "kind": "key-safe", "label": "Side door", "secret": "2468"},
    )
    page = f"/app/vault/{entry['id']}"
    await web_sign_in(app_client, "power")
    token = csrf_of((await app_client.get(page)).text)
    revealed = await app_client.post(f"{page}/reveal", data={"csrf": token, "confirm": "1"})
    assert revealed.status_code == 303
    copy = app_client.cookies.get(FLASH, path="/app")
    assert copy
    assert secret_of((await app_client.get(page)).text) == "2468"
    app_client.cookies.set(FLASH, copy, domain=str(app_client.base_url.host), path="/app")
    replayed = await app_client.get(page)
    assert replayed.status_code == 200
    assert secret_of(replayed.text) is None
    assert "2468" not in replayed.text
    log = await world.portal.get(f"/v1/vault/{entry['id']}/reveals")
    assert len(log.json()["data"]) == 1
