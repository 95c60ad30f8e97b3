"""Signing in to the console over HTTP, through the identity provider's login page."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

from httpx import AsyncClient, Response

from switchboard.identity import clients
from switchboard.runtime import Runtime
from switchboard.tenants.models import Tenant
from tests.factories import PASSWORD, TenantFixture


class _Form(HTMLParser):
    """The first form of a page: its action and its named inputs' values."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.fields: dict[str, str] = {}
        self._inside = False
        self._done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "form" and not self._done and self.action is None:
            self.action = found.get("action", "")
            self._inside = True
        elif tag == "input" and self._inside and "name" in found:
            self.fields[found["name"]] = found.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self._inside:
            self._inside = False
            self._done = True


def first_form(html: str) -> tuple[str, dict[str, str]]:
    parser = _Form()
    parser.feed(html)
    return parser.action or "", parser.fields


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no CSRF field on the page"
    return found.group(1)


def _local(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


async def sign_in(
    client: AsyncClient,
    username: str = "admin",
    *,
    switch: bool = False,
    mount: str = "/admin",
    login: str | None = None,
) -> Response:
    """Start at <mount>/login, post the login page's form, and return the callback's answer.

    ``switch``: the provider remembers someone else; ask it for the login page again.
    ``mount``: the web app (``/admin`` the console, ``/app`` the linen web app).
    ``login``: the sign-in URL to start at instead (where a page sent the browser); the
    provider may remember the user and answer at once."""
    if login is not None:
        start = await client.get(login)
    else:
        start = await client.get(f"{mount}/login", params={"switch": "1"} if switch else None)
    assert start.status_code == 303, start.text
    authorize = start.headers["location"]
    page = await client.get(_local(authorize))
    if page.status_code in (302, 303) and urlsplit(page.headers["location"]).path.endswith(
        f"{mount}/callback"
    ):  # the provider remembers this browser's user: no login page
        return await client.get(_local(page.headers["location"]))
    assert page.status_code == 200, page.text
    action, fields = first_form(page.text)
    fields.update(username=username, password=PASSWORD)
    posted = await client.post(_local(urljoin(authorize, action or authorize)), data=fields)
    assert posted.status_code in (302, 303), posted.text
    callback = posted.headers["location"]
    assert urlsplit(callback).path == f"{mount}/callback", callback
    return await client.get(_local(callback))


async def console_clients(runtime: Runtime, *fixtures: TenantFixture) -> None:
    """Register the console and linen clients of each tenant, as ``switchboard tenant create``
    does."""
    async with runtime.db.transaction() as session:
        for fixture in fixtures:
            tenant = await session.get(Tenant, fixture.id)
            assert tenant is not None
            await clients.ensure_web_clients(
                session, tenant=tenant, scheme="http", clock=runtime.clock
            )
