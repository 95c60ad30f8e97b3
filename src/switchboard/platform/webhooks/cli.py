"""``switchboard webhook ...``: create and manage subscriptions, read the log, replay.

Every command prints JSON (one object per line for lists), so it pipes into ``jq``.
"""

from __future__ import annotations

import click
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.commands import run_in_transaction
from switchboard.kit.cli import json_flag, print_json
from switchboard.kit.clock import iso_utc, parse_iso_utc
from switchboard.kit.destinations import parse_networks
from switchboard.kit.errors import BadRequest
from switchboard.platform.webhooks import service
from switchboard.platform.webhooks.schemas import WebhookItem
from switchboard.runtime import Runtime
from switchboard.tenants import service as tenants

tenant_option = click.option("--tenant", "tenant_name", required=True, help="Tenant name")


@click.group("webhook")
def webhook_cli() -> None:
    """Webhook subscriptions, their delivery log and redelivery."""


@webhook_cli.command("create")
@tenant_option
@click.option("--url", required=True, help="Receiver URL (http or https)")
@click.option("--events", required=True, help="Comma-separated event names, or *")
@click.option("--created-by", default="cli", show_default=True, help="Recorded as createdBy")
def create(tenant_name: str, url: str, events: str, created_by: str) -> None:
    """Create a subscription; prints {"id", "secret"}. The secret is shown this once."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        tenant = await tenants.require_by_name(session, tenant_name)
        row, secret = await service.create_subscription(
            session,
            tenant_id=tenant.id,
            url=url,
            events=events.split(","),
            created_by=created_by,
            clock=runtime.clock,
            box=runtime.box,
            allow=parse_networks(runtime.settings.webhook_allow_private),
        )
        print_json({"id": row.id, "secret": secret})

    run_in_transaction(work)


@webhook_cli.command("list")
@tenant_option
@json_flag
def list_(tenant_name: str, as_json: bool) -> None:
    """One JSON object per subscription (as GET /api.ashx/v1/webhooks shows it; nested, so
    JSON with or without ``--json``)."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        tenant = await tenants.require_by_name(session, tenant_name)
        offset = 0
        while True:
            rows, total = await service.list_subscriptions(
                session, tenant_id=tenant.id, limit=500, offset=offset
            )
            for row in rows:
                print_json(WebhookItem.of(row).model_dump())
            offset += len(rows)
            if not rows or offset >= total:
                break

    run_in_transaction(work)


@webhook_cli.command("delete")
@tenant_option
@click.argument("subscription_id")
def delete(tenant_name: str, subscription_id: str) -> None:
    """Delete a subscription, its queue and its log."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        tenant = await tenants.require_by_name(session, tenant_name)
        await service.delete_subscription(
            session, tenant_id=tenant.id, subscription_id=subscription_id
        )
        print_json({"id": subscription_id, "deleted": True})

    run_in_transaction(work)


@webhook_cli.command("resume")
@tenant_option
@click.argument("subscription_id")
def resume(tenant_name: str, subscription_id: str) -> None:
    """Re-activate a paused subscription (its failure tally starts again at 0)."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        tenant = await tenants.require_by_name(session, tenant_name)
        row = await service.resume_subscription(
            session, tenant_id=tenant.id, subscription_id=subscription_id
        )
        print_json(WebhookItem.of(row).model_dump())

    run_in_transaction(work)


@webhook_cli.command("test")
@tenant_option
@click.argument("subscription_id")
def test(tenant_name: str, subscription_id: str) -> None:
    """Queue a webhook.test delivery to this subscription; prints its delivery id."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        tenant = await tenants.require_by_name(session, tenant_name)
        row = await service.send_test(
            session,
            tenant_id=tenant.id,
            tenant_name=tenant.name,
            subscription_id=subscription_id,
            clock=runtime.clock,
        )
        print_json({"deliveryId": row.id, "event": row.event})

    run_in_transaction(work)


@webhook_cli.command("deliveries")
@tenant_option
@click.argument("subscription_id")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 500))
@click.option("--offset", default=0, show_default=True, type=click.IntRange(0))
@json_flag
def deliveries(
    tenant_name: str, subscription_id: str, limit: int, offset: int, as_json: bool
) -> None:
    """The delivery log of a subscription, one JSON object per attempt, newest first."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        tenant = await tenants.require_by_name(session, tenant_name)
        rows = await service.delivery_log(
            session,
            tenant_id=tenant.id,
            subscription_id=subscription_id,
            limit=limit,
            offset=offset,
        )
        for row in rows:
            print_json(
                {
                    "deliveryId": row.delivery_id,
                    "event": row.event,
                    "attempt": row.attempt,
                    "startedUtc": iso_utc(row.started_at),
                    "statusCode": row.status_code,
                    "latencyMs": row.latency_ms,
                    "error": row.error,
                    "response": row.response_snippet,
                }
            )

    run_in_transaction(work)


@webhook_cli.command("redeliver")
@tenant_option
@click.argument("delivery_id", required=False)
@click.option("--failed-since", help="Replay every failed delivery created since this ISO time")
@click.option("--subscription", "subscription_id", help="With --failed-since: only this one")
def redeliver(
    tenant_name: str,
    delivery_id: str | None,
    failed_since: str | None,
    subscription_id: str | None,
) -> None:
    """Send DELIVERY_ID again, or every failed delivery since a time (--failed-since)."""

    async def work(runtime: Runtime, session: AsyncSession) -> None:
        tenant = await tenants.require_by_name(session, tenant_name)
        if (delivery_id is None) == (failed_since is None):
            raise BadRequest("give either a DELIVERY_ID or --failed-since")
        if delivery_id is not None:
            row = await service.redeliver(
                session, tenant_id=tenant.id, delivery_id=delivery_id, clock=runtime.clock
            )
            print_json({"requeued": 1, "deliveryId": row.id})
            return
        assert failed_since is not None
        try:
            since = parse_iso_utc(failed_since)
        except ValueError:
            raise BadRequest("--failed-since must be an ISO 8601 time") from None
        count = await service.redeliver_failed(
            session,
            tenant_id=tenant.id,
            since=since,
            clock=runtime.clock,
            subscription_id=subscription_id,
        )
        print_json({"requeued": count})

    run_in_transaction(work)
