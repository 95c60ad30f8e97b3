"""A result shown once after a redirect (decision 0602): a form post that makes a secret (an API
key, a password, a share link) or reveals one puts it in the app's sealed flash cookie and
answers 303; the page it names shows it once and expires the cookie, so a reload or the back
button shows the plain page and never posts again."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from fastapi import Request
from starlette.responses import RedirectResponse, Response

from switchboard.runtime import Runtime
from switchboard.web.cookies import FLASH_SECONDS, CookieJar, Flash, WebSession, flash_owner
from switchboard.web.signin import cookie_jar


def _now(request: Request) -> int:
    runtime: Runtime = request.app.state.runtime
    return int(runtime.clock.now().timestamp())


def show_once(request: Request, session: WebSession, url: str, /, **values: str) -> Response:
    """303 to ``url`` (a page of the app), which finds ``values`` once with ``take_once``."""
    response = RedirectResponse(url, status_code=303)
    flash = Flash(
        page=unquote(urlsplit(url).path), owner=flash_owner(session),
        expires=_now(request) + FLASH_SECONDS, values=values,
    )  # fmt: skip
    cookie_jar(request).set_flash(response, flash)
    return response


@dataclass(frozen=True, slots=True)
class Once:
    """What this page shows once (``values``, empty when nothing), and the cookie to expire."""

    values: dict[str, str]
    _jar: CookieJar
    _present: bool

    def spent(self, response: Response) -> Response:
        """``response`` expiring the flash cookie, if the request had one: a reload finds
        nothing. A flash the page could not use (another session's, expired) goes too."""
        if self._present:
            self._jar.clear(response, self._jar.flash_cookie)
        return response


def take_once(request: Request, session: WebSession) -> Once:
    """The flash ``show_once`` left for this session and this page, if any."""
    jar = cookie_jar(request)
    raw = request.cookies.get(jar.flash_cookie)
    found = jar.flash(raw, session=session, page=unquote(request.url.path), now=_now(request))
    return Once(values=found or {}, _jar=jar, _present=raw is not None)
