"""``switchboard route ...``: the routing tables and their dry run, from the shell."""

from __future__ import annotations

import click
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.commands import run_in_transaction
from switchboard.kit.cli import json_flag, print_json
from switchboard.kit.paging import MAX_LIMIT
from switchboard.platform.routing import service
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants
from switchboard.tenants.config import TenantConfig


@click.group("route")
def route_cli() -> None:
    """Inspect routing tables and test which row a call would use."""


@route_cli.command("show")
@click.argument("tenant")
@json_flag
def show(tenant: str, as_json: bool) -> None:
    """Print both tables in evaluation order (index, keys, target), tab-separated."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        offset = 0
        while True:
            inbound, total = await service.list_inbound(
                session, tenant_id=row.id, limit=MAX_LIMIT, offset=offset
            )
            for i, route in enumerate(inbound, start=offset):
                if as_json:
                    print_json({"table": "inbound", "index": i, "did": route.did,
                                "from": route.from_number, "user": route.user})  # fmt: skip
                    continue
                click.echo(f"inbound\t{i}\t{route.did}\t{route.from_number}\t{route.user}")
            offset += MAX_LIMIT
            if offset >= total:
                break
        offset = 0
        while True:
            outbound, total = await service.list_outbound(
                session, tenant_id=row.id, limit=MAX_LIMIT, offset=offset
            )
            for i, rule in enumerate(outbound, start=offset):
                if as_json:
                    print_json({"table": "outbound", "index": i, "match": rule.match,
                                "trunkIds": [str(t) for t in rule.trunk_ids]})  # fmt: skip
                    continue
                trunks = ",".join(str(t) for t in rule.trunk_ids)
                click.echo(f"outbound\t{i}\t{rule.match}\t{trunks}")
            offset += MAX_LIMIT
            if offset >= total:
                break
        default = TenantConfig.from_settings(row.settings).default_trunk_id
        if as_json:
            print_json({"table": "default", "trunkId": default})
        else:
            click.echo(f"default\t{default}")

    run_in_transaction(work)


@route_cli.command("resolve")
@click.argument("tenant")
@click.option("--number", help="Outbound: the dialled number")
@click.option("--did", help="Inbound: the dialled DID")
@click.option("--from", "from_number", help="Inbound: the caller ID (omit for anonymous)")
def resolve(tenant: str, number: str | None, did: str | None, from_number: str | None) -> None:
    """Dry run: the row a call would use, its index and why, as JSON."""
    if (number is None) == (did is None):
        raise click.UsageError("give exactly one of --number (outbound) or --did (inbound)")

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        row = await tenants.require_by_name(session, tenant)
        if number is not None:
            default = TenantConfig.from_settings(row.settings).default_trunk_id
            out = await service.explain_outbound(
                session, tenant_id=row.id, number=number, default_trunk_id=default
            )
            print_json(
                {
                    "number": out.number,
                    "normalisedNumber": out.normalised_number,
                    "index": out.index,
                    "match": out.row.match if out.row else None,
                    "trunkIds": out.trunk_ids,
                    "usedDefault": out.used_default,
                    "reason": out.reason,
                }
            )
            return
        assert did is not None
        inn = await service.explain_inbound(
            session, tenant_id=row.id, did=did, from_number=from_number
        )
        print_json(
            {
                "did": inn.did,
                "fromNumber": inn.from_number,
                "index": inn.index,
                "route": None
                if inn.row is None
                else {"did": inn.row.did, "fromNumber": inn.row.from_number, "user": inn.row.user},
                "user": inn.user,
                "reason": inn.reason,
            }
        )

    run_in_transaction(work)
