"""The sign-in pages: Jinja2 templates, their security headers and the IdP's cookies."""

from __future__ import annotations

from typing import Any

import segno
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from switchboard.kit.crypto import constant_time_equals, random_token

SESSION_COOKIE = "sb_idp_session"
CSRF_COOKIE = "sb_idp_csrf"
COOKIE_PATH = "/oidc.ashx"
# The device cookie (decision 0031) is read by the login form's post alone.
DEVICE_COOKIE_PATH = f"{COOKIE_PATH}/authorize"

# No script at all; styles from our own origin; never framed (clickjacking of the password form).
# No form-action: browsers apply it to the redirect that follows the form, which leaves the origin
# for the client's redirect URI.
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

_templates = Environment(
    loader=PackageLoader("switchboard.identity.signin", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


def render(
    name: str, *, status: int = 200, headers: dict[str, str] | None = None, **context: Any
) -> HTMLResponse:
    html = _templates.get_template(name).render(**context)
    return HTMLResponse(html, status_code=status, headers={**SECURITY_HEADERS, **(headers or {})})


def qr_svg(link: str, *, title: str) -> str:
    """A QR code of ``link`` as inline SVG, drawn on the server (the pages run no script)."""
    return str(segno.make(link, error="m").svg_inline(scale=4, title=title))


def error_page(description: str, *, status: int = 400) -> HTMLResponse:
    """Shown instead of a redirect when the client or its redirect URI is not known good."""
    return render("error.html", status=status, description=description)


def redirect(url: str, *, status: int = 302) -> RedirectResponse:
    return RedirectResponse(url, status_code=status, headers=SECURITY_HEADERS)


def set_cookie(
    response: Response,
    name: str,
    value: str,
    *,
    secure: bool,
    max_age: int,
    path: str = COOKIE_PATH,
) -> None:
    response.set_cookie(
        name, value, max_age=max_age, path=path, httponly=True, samesite="lax", secure=secure
    )


def delete_cookie(response: Response, name: str, *, secure: bool) -> None:
    response.delete_cookie(name, path=COOKIE_PATH, httponly=True, samesite="lax", secure=secure)


def csrf_token(request: Request) -> tuple[str, bool]:
    """The browser's CSRF token (double-submit: cookie and hidden field) and whether it is new."""
    existing = request.cookies.get(CSRF_COOKIE, "")
    if 32 <= len(existing) <= 64:
        return existing, False
    return random_token(nbytes=24), True


def csrf_ok(request: Request, submitted: str | None) -> bool:
    cookie = request.cookies.get(CSRF_COOKIE)
    return bool(cookie and submitted and constant_time_equals(cookie, submitted))
