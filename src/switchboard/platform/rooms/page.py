"""``/rooms/<name>``: the room page (camera, microphone, a tile per peer, mute, leave, mode)."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.templating import Jinja2Templates
from starlette.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

from switchboard.kit.errors import NotFound
from switchboard.platform.rooms.signaling import ROOM_NAME
from switchboard.runtime import RuntimeDep

HERE = Path(__file__).parent
STATIC = HERE / "static"
STATIC_PREFIX = "/rooms/static/"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "media-src 'self' blob: mediastream:; connect-src 'self'; form-action 'self'; "
    "base-uri 'none'; object-src 'none'; frame-ancestors 'none'"
)

templates = Jinja2Templates(directory=HERE / "templates")


@cache
def static_url(name: str) -> str:
    digest = hashlib.sha256((STATIC / name).read_bytes()).hexdigest()[:12]
    return f"{STATIC_PREFIX}{name}?v={digest}"


templates.env.globals["static"] = static_url

router = APIRouter(include_in_schema=False)
static_files = StaticFiles(directory=STATIC)


@router.get("/rooms/{name}")
async def room_page(request: Request, name: str, runtime: RuntimeDep) -> HTMLResponse:
    if not ROOM_NAME.match(name):
        raise NotFound("no such room name")
    stats_seconds = runtime.settings.room_stats_seconds
    response = templates.TemplateResponse(
        request, "room.html", {"room": name, "stats_seconds": stats_seconds}
    )
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Referrer-Policy"] = "same-origin"
    # The page asks for camera and microphone of this origin only.
    response.headers["Permissions-Policy"] = "camera=(self), microphone=(self)"
    return response
