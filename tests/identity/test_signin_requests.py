# ruff: noqa: F811 (the tests take the imported fixture `browser` by its name)
"""Authorization requests by form post (OpenID Connect Core 3.1.2.1), the prompt values the
provider advertises, and requests whose bytes are not UTF-8, over HTTP on both databases."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from httpx import AsyncClient, Response

from tests.factories import PASSWORD
from tests.identity.signin_helpers import parse_form, redirect_params, sign_in
from tests.identity.test_signin_errors import (  # noqa: F401 (`browser` is a fixture)
    REDIRECT_URI,
    authorize_url,
    browser,
    exchange,
)

STATE = "st&=ä 1"  # what authorize_url sends


def authorize_form(**overrides: str | None) -> dict[str, str]:
    """The parameters of ``authorize_url`` as a form's fields."""
    return dict(parse_qsl(urlsplit(authorize_url(**overrides)).query))


async def post_encoded(browser: AsyncClient, path: str, content: str) -> Response:
    """A form post of ``content`` exactly as written (httpx would encode a dict itself)."""
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    return await browser.post(path, content=content, headers=form)


def refused(answer: Response, status: int = 400) -> bool:
    """An error page, no redirect anywhere."""
    return answer.status_code == status and "location" not in answer.headers


async def test_an_authorization_request_by_post_signs_in(browser: AsyncClient) -> None:
    page = await browser.post("/oidc.ashx/authorize", data=authorize_form())
    assert page.status_code == 200, page.text
    form = parse_form(page)
    # The login form posts back to the request as a URL, as it does for a GET.
    assert dict(parse_qsl(urlsplit(form.url).query)) == authorize_form()
    answer = await browser.post(
        form.url, data={**form.fields, "username": "admin", "password": PASSWORD}
    )
    params = redirect_params(answer)
    assert params["state"] == STATE
    assert (await exchange(browser, params["code"]))[0] == 200
    # Signed in, a posted request is answered at once, prompt=none too.
    again = await browser.post("/oidc.ashx/authorize", data=authorize_form(prompt="none"))
    assert again.status_code == 302
    assert again.headers["location"].startswith(REDIRECT_URI + "?")
    assert redirect_params(again)["state"] == STATE
    assert (await exchange(browser, redirect_params(again)["code"]))[0] == 200


async def test_a_posted_request_is_held_to_the_rules_of_a_get(browser: AsyncClient) -> None:
    wrong = await browser.post("/oidc.ashx/authorize", data=authorize_form(scope="openid admin"))
    assert redirect_params(wrong)["error"] == "invalid_scope"
    unknown = await browser.post("/oidc.ashx/authorize", data=authorize_form(client_id="nobody"))
    assert refused(unknown)
    repeated = await post_encoded(
        browser, "/oidc.ashx/authorize", f"{urlencode(authorize_form())}&state=y"
    )
    assert refused(repeated)
    assert "repeated" in repeated.text
    multipart = await browser.post(
        "/oidc.ashx/authorize", data=authorize_form(), files={"x": ("x.txt", b"x")}
    )
    assert refused(multipart, 415)
    assert "application/x-www-form-urlencoded" in multipart.text


async def test_prompt_consent_and_select_account(browser: AsyncClient) -> None:
    assert "code" in redirect_params(await sign_in(browser, authorize_url()))
    # The registration of a first-party client is the consent: no page asks again.
    consent = await browser.get(authorize_url(prompt="consent"))
    assert consent.status_code == 302
    assert "code" in redirect_params(consent)
    # The login page is where another account is chosen, even in a browser signed in.
    select = await browser.get(authorize_url(prompt="select_account"))
    assert select.status_code == 200
    assert 'name="password"' in select.text
    for prompt in ("none consent", "select_account none", "create"):
        answer = await browser.get(authorize_url(prompt=prompt))
        assert redirect_params(answer)["error"] == "invalid_request"
    discovery = await browser.get("/oidc.ashx/.well-known/openid-configuration")
    assert discovery.json()["prompt_values_supported"] == [
        "consent",
        "login",
        "none",
        "select_account",
    ]


@pytest.mark.parametrize("raw_state", ["%FF", "%C3", "a%E9b", "%ED%A0%80"])
async def test_a_state_that_is_not_utf8_is_refused_not_altered(
    browser: AsyncClient, raw_state: str
) -> None:
    query = urlsplit(authorize_url(state=None)).query + f"&state={raw_state}"
    got = await browser.get(f"/oidc.ashx/authorize?{query}")
    assert refused(got)
    assert "UTF-8" in got.text
    posted = await post_encoded(browser, "/oidc.ashx/authorize", query)
    assert refused(posted)
    # The login form's post of such a request is refused the same way, and signs nobody in.
    page = await browser.get(authorize_url())
    form = parse_form(page)
    login = await browser.post(
        f"/oidc.ashx/authorize?{query}",
        data={**form.fields, "username": "admin", "password": PASSWORD},
    )
    assert refused(login)
    assert "sb_idp_session" not in login.headers.get("set-cookie", "")
    logout = await browser.get(f"/oidc.ashx/end_session?state={raw_state}")
    assert refused(logout)
    posted_logout = await post_encoded(browser, "/oidc.ashx/end_session", f"state={raw_state}")
    assert refused(posted_logout)


async def test_utf8_state_in_every_form_comes_back_intact(browser: AsyncClient) -> None:
    for state in ("%C3%A4", "%F0%9F%93%9E", "%EF%BF%BD"):  # ä, a telephone, U+FFFD itself
        query = urlsplit(authorize_url(state=None)).query + f"&state={state}"
        answer = await sign_in(browser, f"/oidc.ashx/authorize?{query}")
        expected = dict(parse_qsl(f"state={state}"))["state"]
        assert redirect_params(answer)["state"] == expected
