"""``switchboard room list|lobby|promote|demote``.

``promote`` and ``demote`` ask the running server (``--url``, by default the public base URL)
through ``POST /signal.ashx?sfu-mode=...``, signed with the tenant's signaling secret: the
peers of a room are connected to a server process, which must tell them to migrate.
"""

from __future__ import annotations

import asyncio
import sys

import click
import httpx
import orjson
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.commands import run_in_transaction
from switchboard.kit.cli import json_flag, print_json
from switchboard.platform.rooms import repository
from switchboard.platform.rooms.endpoints import canonical_string
from switchboard.platform.whitelist import service as whitelist
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from switchboard.tenants.models import TenantDomain


@click.group("room")
def room_cli() -> None:
    """Meeting rooms: their mode, lobby and last known counts."""


@room_cli.command("list")
@click.option("--tenant", required=True)
@json_flag
def list_rooms(tenant: str, as_json: bool) -> None:
    """One line per room: name, mode, lobby, peers, humans."""

    async def work(_runtime: Runtime, session: AsyncSession) -> list[dict[str, object]]:
        row = await tenants.require_by_name(session, tenant)
        return [
            {"room": r.name, "mode": r.mode, "lobby": r.lobby, "peerCount": r.peer_count,
             "humanCount": r.human_count}
            for r in await repository.list_rooms(session, tenant_id=row.id)
        ]  # fmt: skip

    for item in run_in_transaction(work):
        if as_json:
            print_json(item)
        else:
            lobby = "lobby" if item["lobby"] else "open"
            click.echo(f"{item['room']}\t{item['mode']}\t{lobby}\t{item['peerCount']}\t"
                       f"{item['humanCount']}")  # fmt: skip


@room_cli.command("lobby")
@click.option("--tenant", required=True)
@click.option("--room", required=True)
@click.option("--on/--off", "on", default=True, help="Waiting peers need an admit")
def lobby(tenant: str, room: str, on: bool) -> None:
    """Give a room a lobby (unverified peers wait until admitted) or open it."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        found = await repository.get_or_create(
            session, tenant_id=row.id, name=room, now=runtime.clock.now()
        )
        found.lobby = on

    run_in_transaction(work)
    click.echo(f"{room}\t{'lobby' if on else 'open'}")


def tenant_endpoint(tenant: str) -> tuple[str, str, str]:
    """How this machine reaches a tenant's rooms: the Host (the tenant's first domain), the
    server's public base URL, and the tenant's signaling secret."""

    async def work(runtime: Runtime, session: AsyncSession) -> tuple[str, str, str]:
        row = await tenants.require_by_name(session, tenant)
        stmt = select(TenantDomain.domain).where(TenantDomain.tenant_id == row.id).limit(1)
        host = (await session.execute(stmt)).scalar_one_or_none() or ""
        return host, runtime.settings.public_base_url, runtime.box.open(row.signaling_secret)

    return run_in_transaction(work)


def _flip(tenant: str, room: str, mode: str, url: str | None, reason: str) -> None:
    host, base, secret = tenant_endpoint(tenant)
    body = orjson.dumps({"reason": reason}) if reason else b""
    signature = whitelist.sign(secret, canonical_string(tenant, room, mode, len(body)))

    async def call() -> httpx.Response:
        async with httpx.AsyncClient(base_url=url or base, timeout=30) as http:
            return await http.post(
                "/signal.ashx", params={"sfu-mode": mode, "room": room}, content=body,
                headers={"Host": host, "X-Platform-Admin-Signature": signature,
                         "Content-Type": "application/json"},
            )  # fmt: skip

    try:
        response = asyncio.run(call())
    except httpx.HTTPError as exc:
        click.echo(f"error: the server is unreachable ({type(exc).__name__})", err=True)
        sys.exit(2)
    answer = response.json()
    if response.status_code != 200:
        detail = answer.get("error_description") or answer.get("error")
        click.echo(f"error: {detail}", err=True)
        sys.exit(2)
    click.echo(f"{room}\t{answer['mode']}\t{'changed' if answer['changed'] else 'unchanged'}")


_URL = click.option("--url", default=None, help="The server (default: the public base URL)")


@room_cli.command("promote")
@click.option("--tenant", required=True)
@click.option("--room", required=True)
@click.option("--reason", default="", help="Operator text (default admin-override)")
@_URL
def promote(tenant: str, room: str, reason: str, url: str | None) -> None:
    """Move a room to the SFU (its peers migrate make-before-break)."""
    _flip(tenant, room, "sfu", url, reason)


@room_cli.command("demote")
@click.option("--tenant", required=True)
@click.option("--room", required=True)
@click.option("--reason", default="", help="Operator text (default admin-override)")
@_URL
def demote(tenant: str, room: str, reason: str, url: str | None) -> None:
    """Move a room back to mesh."""
    _flip(tenant, room, "mesh", url, reason)
