"""``GET /api.ashx/v1/webhooks``: the read-only view of the caller's subscriptions (spec 4.7)."""

from __future__ import annotations

from fastapi import APIRouter

from switchboard.identity.deps import AdminCaller
from switchboard.kit.paging import Paging
from switchboard.kit.schemas import ERROR_RESPONSES, Page
from switchboard.platform.webhooks import service
from switchboard.platform.webhooks.schemas import WebhookItem
from switchboard.runtime import Session

router = APIRouter(prefix="/api.ashx/v1/webhooks", tags=["webhooks"], responses=ERROR_RESPONSES)


@router.get(
    "",
    response_model=Page[WebhookItem],
    summary="List webhook subscriptions (the signing secret is never returned)",
)
async def list_webhooks(caller: AdminCaller, session: Session, paging: Paging) -> Page[WebhookItem]:
    rows, total = await service.list_subscriptions(
        session, tenant_id=caller.tenant_id, limit=paging.limit, offset=paging.offset
    )
    return Page(
        data=[WebhookItem.of(row) for row in rows],
        **paging.envelope(total),
    )
