"""A scripted browser for the sign-in pages: fetch the form, fill it in, post it."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import parse_qs, urljoin, urlsplit

from httpx import AsyncClient, Response

from tests.factories import PASSWORD


class _FormParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.inputs: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.action = values.get("action", "")
        elif tag == "input" and "name" in values:
            self.inputs[values["name"]] = values.get("value", "")


@dataclass
class LoginForm:
    url: str
    fields: dict[str, str]


def parse_form(page: Response) -> LoginForm:
    parser = _FormParser()
    parser.feed(page.text)
    assert parser.action is not None, page.text
    return LoginForm(url=urljoin(str(page.url), parser.action), fields=parser.inputs)


async def sign_in(
    browser: AsyncClient,
    authorize_url: str,
    *,
    username: str = "admin",
    password: str = PASSWORD,
) -> Response:
    """Open the authorization URL, post the login form; the IdP's answer (a redirect, or the
    form again with an error). A browser already signed in is redirected at once."""
    page = await browser.get(authorize_url)
    if page.status_code == 302:
        return page
    assert page.status_code == 200, page.text
    form = parse_form(page)
    fields = {**form.fields, "username": username, "password": password}
    return await browser.post(form.url, data=fields)


def redirect_params(response: Response) -> dict[str, str]:
    assert response.status_code in (302, 303), response.text
    location = response.headers["location"]
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
