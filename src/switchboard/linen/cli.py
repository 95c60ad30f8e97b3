"""``switchboard linen ...``: laundry keys and statistics from the operator's shell."""

from __future__ import annotations

import datetime as dt

import click
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.commands import run_in_transaction
from switchboard.kit.cli import json_flag, print_json
from switchboard.kit.clock import iso_utc
from switchboard.kit.paging import PageParams
from switchboard.linen.laundries import service as laundries
from switchboard.linen.statistics import service as statistics
from switchboard.linen.statistics.repository import StatsQuery
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants

ALL = PageParams(limit=10_000, offset=0, path="", query=())


@click.group("linen")
def linen_cli() -> None:
    """The linen portal: laundries, their API keys, statistics."""


@linen_cli.command("laundries")
@click.argument("tenant")
@json_flag
def list_laundries(tenant: str, as_json: bool) -> None:
    """One line per laundry of TENANT: id, name, active, live keys."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        found, _ = await laundries.list_laundries(
            session, tenant_id=row.id, active=None, paging=ALL, sort="id"
        )
        for laundry in found:
            keys, _ = await laundries.list_keys(
                session, tenant_id=row.id, laundry_id=laundry.id, paging=ALL
            )
            live = sum(1 for key in keys if key.revoked_at is None)
            state = "active" if laundry.active else "inactive"
            if as_json:
                print_json({"id": laundry.id, "name": laundry.name, "active": laundry.active,
                            "liveKeys": live})  # fmt: skip
                continue
            click.echo(f"{laundry.id}\t{laundry.name}\t{state}\t{live} keys")

    run_in_transaction(work)


@linen_cli.group("key")
def key_cli() -> None:
    """Laundry API keys (`lk_...`)."""


@key_cli.command("issue")
@click.argument("tenant")
@click.argument("laundry_id", type=int)
@click.option("--name", default="", help="Operator label")
def issue_key(tenant: str, laundry_id: int, name: str) -> None:
    """Issue a key for LAUNDRY_ID of TENANT; the key is printed once, only its hash is kept."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        key, plaintext = await laundries.issue_key(
            session, tenant_id=row.id, laundry_id=laundry_id, name=name, created_by="cli",
            clock=runtime.clock,
        )  # fmt: skip
        click.echo(f"{key.id}\t{plaintext}")

    run_in_transaction(work)


@key_cli.command("revoke")
@click.argument("tenant")
@click.argument("laundry_id", type=int)
@click.argument("key_id", type=int)
def revoke_key(tenant: str, laundry_id: int, key_id: int) -> None:
    """Revoke key KEY_ID of LAUNDRY_ID; the laundry's other keys keep working."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        key = await laundries.revoke_key(
            session, tenant_id=row.id, laundry_id=laundry_id, key_id=key_id, clock=runtime.clock
        )
        click.echo(f"{key.id}\trevoked {iso_utc(key.revoked_at)}")

    run_in_transaction(work)


@linen_cli.command("stats")
@click.argument("tenant")
@click.option(
    "--group-by",
    type=click.Choice(["month", "property", "laundry", "group"]),
    default="month",
    show_default=True,
)
@click.option("--from", "date_from", type=click.DateTime(["%Y-%m-%d"]), default=None)
@click.option("--to", "date_to", type=click.DateTime(["%Y-%m-%d"]), default=None)
@json_flag
def stats(
    tenant: str,
    group_by: str,
    date_from: dt.datetime | None,
    date_to: dt.datetime | None,
    as_json: bool,
) -> None:
    """Statistics rows of TENANT as JSON, one per line (same rows as the Data API; nested, so
    JSON with or without ``--json``)."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        start, end = statistics.default_range(runtime.clock)
        query = StatsQuery(
            tenant_id=row.id,
            group_by=group_by,
            date_from=date_from.date() if date_from else start,
            date_to=date_to.date() if date_to else end,
        )
        for item in await statistics.statistics(session, query):
            print_json(item.model_dump(mode="json", by_alias=True))

    run_in_transaction(work)
