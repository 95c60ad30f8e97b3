"""One module per console page; ``ROUTERS`` in navigation order."""

from __future__ import annotations

from fastapi import APIRouter

from switchboard.console.pages import (
    apikeys,
    auth,
    calls,
    numbers,
    relay,
    routing,
    signin,
    transcripts,
    users,
    webhooks,
    whitelist,
)

ROUTERS: list[APIRouter] = [
    auth.router,
    calls.router,
    transcripts.router,
    webhooks.router,
    apikeys.router,
    numbers.router,
    routing.router,
    whitelist.router,
    users.router,
    signin.router,
    relay.router,
]
