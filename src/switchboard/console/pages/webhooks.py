"""Webhooks: subscriptions with an event picker (secret shown once), pause/resume, test
deliveries, the delivery log and redelivery."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from switchboard.console.deps import FormOperator, Operator, OperatorDep, notice_of, render
from switchboard.kit.destinations import parse_networks
from switchboard.kit.errors import NotFound
from switchboard.platform.events.catalogue import ALL_EVENTS
from switchboard.platform.webhooks import service
from switchboard.platform.webhooks.schemas import WebhookItem
from switchboard.runtime import RuntimeDep, Session
from switchboard.web.flash import once_for, show_once

router = APIRouter(prefix="/webhooks")

PAGE_SIZE = 100
LOG_SIZE = 100


async def _list(
    request: Request, operator: Operator, session: Session, *, status: int = 200, **extra: object
) -> Response:
    rows, total = await service.list_subscriptions(
        session, tenant_id=operator.tenant.id, limit=PAGE_SIZE, offset=0
    )
    return render(
        request, "webhooks.html", operator, status=status,
        subscriptions=[WebhookItem.of(row) for row in rows], total=total, events=ALL_EVENTS,
        **extra,
    )  # fmt: skip


@router.get("")
async def webhooks_page(request: Request, operator: OperatorDep, session: Session) -> Response:
    """The subscriptions; once after a create, the new subscription's signing secret."""
    once = await once_for(request, operator.session)

    async def page(values: dict[str, str]) -> Response:
        created = None
        if "subscription" in values:
            try:
                row = await service.get_subscription(
                    session, tenant_id=operator.tenant.id, subscription_id=values["subscription"]
                )
            except NotFound:  # deleted since (in another tab)
                row = None
            created = WebhookItem.of(row) if row is not None else None
        secret = values.get("secret") if created is not None else None
        return await _list(request, operator, session, created=created, secret=secret)

    return await once.show(page)


@router.post("")
async def create(
    request: Request, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    form = await request.form()
    events = [str(value) for value in form.getlist("events")]
    row, secret = await service.create_subscription(
        session,
        tenant_id=operator.tenant.id,
        url=str(form.get("url", "")),
        events=events,
        created_by=operator.user.username,
        clock=runtime.clock,
        box=runtime.box,
        allow=parse_networks(runtime.settings.webhook_allow_private),
    )
    return await show_once(
        request, session, operator.session, "/admin/webhooks", subscription=row.id, secret=secret
    )


@router.get("/{subscription_id}")
async def detail(
    request: Request, subscription_id: str, operator: OperatorDep, session: Session
) -> Response:
    row = await service.get_subscription(
        session, tenant_id=operator.tenant.id, subscription_id=subscription_id
    )
    attempts = await service.delivery_log(
        session, tenant_id=operator.tenant.id, subscription_id=row.id, limit=LOG_SIZE, offset=0
    )
    redeliverable = await service.redeliverable(
        session, tenant_id=operator.tenant.id, subscription=row, attempts=attempts
    )
    return render(
        request, "webhook.html", operator, subscription=WebhookItem.of(row), attempts=attempts,
        redeliverable=redeliverable, notice=notice_of(request),
    )  # fmt: skip


def _back(subscription_id: str, notice: str) -> Response:
    return RedirectResponse(f"/admin/webhooks/{subscription_id}?notice={notice}", status_code=303)


@router.post("/{subscription_id}/delete")
async def delete(subscription_id: str, operator: FormOperator, session: Session) -> Response:
    await service.delete_subscription(
        session, tenant_id=operator.tenant.id, subscription_id=subscription_id
    )
    return RedirectResponse("/admin/webhooks", status_code=303)


@router.post("/{subscription_id}/resume")
async def resume(subscription_id: str, operator: FormOperator, session: Session) -> Response:
    await service.resume_subscription(
        session, tenant_id=operator.tenant.id, subscription_id=subscription_id
    )
    return _back(subscription_id, "resumed")


@router.post("/{subscription_id}/test")
async def send_test(
    subscription_id: str, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    await service.send_test(
        session, tenant_id=operator.tenant.id, tenant_name=operator.tenant.name,
        subscription_id=subscription_id, clock=runtime.clock,
    )  # fmt: skip
    return _back(subscription_id, "test-queued")


@router.post("/deliveries/{delivery_id}/redeliver")
async def redeliver(
    delivery_id: str, operator: FormOperator, session: Session, runtime: RuntimeDep
) -> Response:
    delivery = await service.redeliver(
        session, tenant_id=operator.tenant.id, delivery_id=delivery_id, clock=runtime.clock
    )
    return _back(delivery.subscription_id, "redelivery-queued")
