"""A web app's cookies: sealed (AES-GCM) so that they can be neither read nor forged."""

from __future__ import annotations

import secrets
from dataclasses import asdict, dataclass
from typing import Any

import orjson
from cryptography.exceptions import InvalidTag
from starlette.responses import Response

from switchboard.auth.models import User, credential_stamp
from switchboard.kit.crypto import SecretBox, constant_time_equals, sha256_hex

SESSION_SECONDS = 8 * 3600
# the console's session cookie; the room signaling reads it too (a console admin is verified)
CONSOLE_COOKIE = "sb_console"
LOGIN_SECONDS = 600
# a result shown once after a redirect: long enough for the redirect, short if it never comes
FLASH_SECONDS = 300


@dataclass(frozen=True, slots=True)
class WebSession:
    """Who is signed in, which tenant they act on, and the CSRF token of their forms."""

    user_id: int
    tenant_id: int
    acting_tenant_id: int
    csrf: str
    expires: int
    id_token: str
    # The user's credentials when signing in (``credential_stamp``): a new password, or the
    # user signed out everywhere, ends the session. A cookie without it (made by an earlier
    # version) is no session.
    stamp: str
    # A random id given at sign-in: signing out records it as ended (``web.repository``), so
    # that a copy of the cookie ends too. A cookie without one is no session either.
    sid: str
    # The identity provider's browser session signed in through (the ID token's ``sid``): the
    # session holds only while that one is live (decision 0605). A cookie without it, sealed
    # before revision 0020, is no session.
    idp_sid: str

    def still_holds(self, user: User) -> bool:
        """Whether ``user`` (the session's, read now) may go on: enabled, of the session's
        tenant, with the password and security stamp the session was signed in with."""
        return (
            not user.disabled
            and user.tenant_id == self.tenant_id
            and constant_time_equals(self.stamp, credential_stamp(user))
        )


@dataclass(frozen=True, slots=True)
class PendingLogin:
    """What the callback must find again: the state, nonce and PKCE verifier of one login, and
    the page of the app the browser asked for (a local path, checked by ``local_target``)."""

    state: str
    nonce: str
    verifier: str
    expires: int
    next: str = ""


@dataclass(frozen=True, slots=True)
class Flash:
    """A result of a form post to show once, on the page the post redirects to (decision
    0602): for one session (``owner``, ``flash_owner``) and one page (``page``, its path). Its
    values stay on the server (``web.flash``), under the random ``id``."""

    page: str
    owner: str
    expires: int
    id: str


def flash_owner(session: WebSession) -> str:
    """Who a flash is for: the user, the tenant they act on, and their session's id and CSRF
    token (a new sign-in makes new ones), as a digest; another session's flash is no flash."""
    return sha256_hex(f"{session.user_id}:{session.acting_tenant_id}:{session.sid}:{session.csrf}")


def new_csrf() -> str:
    return secrets.token_urlsafe(32)


def new_sid() -> str:
    return secrets.token_urlsafe(16)


class CookieJar:
    """Seals and opens one app's cookies (``<name>``, ``<name>_login`` and ``<name>_flash`` on
    ``path``) with a key of their own."""

    def __init__(self, master_secret: str, *, name: str, path: str, secure: bool) -> None:
        self._box = SecretBox(master_secret, purpose=f"{name.removeprefix('sb_')}-cookies")
        self.session_cookie = name
        self.login_cookie = f"{name}_login"
        self.flash_cookie = f"{name}_flash"
        self.path = path
        self.secure = secure

    def _open(self, raw: str | None) -> dict[str, Any] | None:
        if not raw:
            return None
        try:
            value = orjson.loads(self._box.open(raw))
        except (InvalidTag, ValueError, orjson.JSONDecodeError):
            return None
        return value if isinstance(value, dict) else None

    def session(self, raw: str | None, *, now: int) -> WebSession | None:
        data = self._open(raw)
        try:
            found = WebSession(**data) if data else None
        except TypeError:
            return None
        return found if found is not None and found.expires > now else None

    def pending(self, raw: str | None, *, now: int) -> PendingLogin | None:
        data = self._open(raw)
        try:
            found = PendingLogin(**data) if data else None
        except TypeError:
            return None
        return found if found is not None and found.expires > now else None

    def flash(self, raw: str | None, *, session: WebSession, page: str, now: int) -> str | None:
        """The id of a flash for ``session`` on ``page`` that has not expired; None for
        anything else (none, forged, expired, another session's or another page's, or sealed
        before flashes had ids)."""
        data = self._open(raw)
        try:
            found = Flash(**data) if data else None
        except TypeError:
            return None
        if found is None or found.expires <= now or found.page != page:
            return None
        if not constant_time_equals(found.owner, flash_owner(session)):
            return None
        return found.id if isinstance(found.id, str) and found.id else None

    def _set(self, response: Response, name: str, value: Any, max_age: int) -> None:
        response.set_cookie(
            name,
            self._box.seal(orjson.dumps(asdict(value)).decode()),
            max_age=max_age,
            path=self.path,
            httponly=True,
            samesite="lax",
            secure=self.secure,
        )

    def set_session(self, response: Response, value: WebSession) -> None:
        self._set(response, self.session_cookie, value, SESSION_SECONDS)

    def set_pending(self, response: Response, value: PendingLogin) -> None:
        self._set(response, self.login_cookie, value, LOGIN_SECONDS)

    def set_flash(self, response: Response, value: Flash) -> None:
        self._set(response, self.flash_cookie, value, FLASH_SECONDS)

    def clear(self, response: Response, name: str) -> None:
        response.delete_cookie(
            name, path=self.path, httponly=True, samesite="lax", secure=self.secure
        )
