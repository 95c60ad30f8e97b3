"""One module per console page; ``ROUTERS`` in navigation order."""

from __future__ import annotations

from fastapi import APIRouter

from switchboard.console.pages import apikeys, auth, calls, transcripts, webhooks

ROUTERS: list[APIRouter] = [
    auth.router,
    calls.router,
    transcripts.router,
    webhooks.router,
    apikeys.router,
]
