"""Time-limited TURN credentials in coturn's shared-secret REST scheme (``use-auth-secret``).

The username is ``<expiry unix time>:<label>`` and the password is
``base64(HMAC-SHA1(secret, username))``; coturn recomputes the password from the shared secret
and refuses the username once its time has passed. Nothing is stored. The module depends on the
standard library and the clock only, so the platform (room pages) can import it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Sequence
from typing import TypedDict

from switchboard.kit.clock import Clock

DEFAULT_TTL_SECONDS = 3600


class IceServer(TypedDict):
    urls: list[str]
    username: str
    credential: str


def turn_password(secret: str, username: str) -> str:
    digest = hmac.new(secret.encode(), username.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def turn_credentials(
    *, secret: str, label: str, clock: Clock, ttl: int = DEFAULT_TTL_SECONDS
) -> tuple[str, str]:
    """A (username, password) pair valid for ``ttl`` seconds from now."""
    if not secret:
        raise ValueError("the relay's shared secret is not configured")
    if ":" in label:
        raise ValueError("the label may not contain ':'")
    expiry = int(clock.timestamp()) + ttl
    username = f"{expiry}:{label}"
    return username, turn_password(secret, username)


def ice_servers(
    *, urls: Sequence[str], secret: str, label: str, clock: Clock, ttl: int = DEFAULT_TTL_SECONDS
) -> list[IceServer]:
    """The ``iceServers`` value of an ``RTCPeerConnection`` configuration for a room page."""
    username, credential = turn_credentials(secret=secret, label=label, clock=clock, ttl=ttl)
    return [IceServer(urls=list(urls), username=username, credential=credential)]
