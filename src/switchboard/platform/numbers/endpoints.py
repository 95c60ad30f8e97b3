"""Virtual numbers (spec 4.3): read-only over REST; operators manage them with the CLI."""

from __future__ import annotations

from fastapi import APIRouter

from switchboard.identity.deps import AdminCaller
from switchboard.kit.paging import Paging
from switchboard.kit.schemas import ERROR_RESPONSES
from switchboard.platform.numbers import service
from switchboard.platform.numbers.schemas import NumberItem, NumberPage
from switchboard.runtime import Session

router = APIRouter(prefix="/api.ashx/v1/numbers", tags=["numbers"], responses=ERROR_RESPONSES)


@router.get(
    "",
    response_model=NumberPage,
    summary="List virtual numbers (never their AI key or system prompt), plus `tenant`",
)
async def list_numbers(caller: AdminCaller, session: Session, paging: Paging) -> NumberPage:
    rows, total = await service.list_numbers(
        session, tenant_id=caller.tenant_id, limit=paging.limit, offset=paging.offset
    )
    return NumberPage(
        data=[NumberItem.model_validate(row) for row in rows],
        **paging.envelope(total),
        tenant=caller.tenant_name,
    )
