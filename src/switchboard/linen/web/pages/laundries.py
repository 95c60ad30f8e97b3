"""Laundries: list, detail with price lists, and API keys (shown once, rotate, revoke)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import RedirectResponse, Response

from switchboard.linen.common import IdPath
from switchboard.linen.laundries import service
from switchboard.linen.laundries.models import LaundryKey
from switchboard.linen.web.deps import Viewer, ViewerDep, Writer, render
from switchboard.linen.web.pages._shared import ALL, all_item_types
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/laundries")


@router.get("")
async def list_page(request: Request, viewer: ViewerDep, session: Session) -> Response:
    rows, _ = await service.list_laundries(
        session, tenant_id=viewer.tenant.id, active=None, paging=ALL, sort="name"
    )
    return render(request, "laundries.html", viewer, laundries=rows)


async def _detail(
    request: Request,
    viewer: Viewer,
    session: AsyncSession,
    laundry_id: int,
    *,
    minted: LaundryKey | None = None,
    plaintext: str | None = None,
) -> Response:
    tenant_id = viewer.tenant.id
    laundry = await service.get(session, tenant_id=tenant_id, laundry_id=laundry_id)
    prices, _ = await service.list_price_lists(
        session, tenant_id=tenant_id, laundry_id=laundry.id, paging=ALL
    )
    keys, _ = await service.list_keys(
        session, tenant_id=tenant_id, laundry_id=laundry.id, paging=ALL
    )
    kinds = {k.id: k for k in await all_item_types(session, tenant_id)}
    return render(
        request, "laundry.html", viewer, laundry=laundry, prices=prices, keys=keys, kinds=kinds,
        minted=minted, plaintext=plaintext, status=201 if minted else 200,
    )  # fmt: skip


@router.get("/{laundry_id}")
async def detail_page(
    request: Request, laundry_id: IdPath, viewer: ViewerDep, session: Session
) -> Response:
    return await _detail(request, viewer, session, laundry_id)


@router.post("/{laundry_id}/keys")
async def issue_key(
    request: Request,
    laundry_id: IdPath,
    viewer: Writer,
    session: Session,
    runtime: RuntimeDep,
    name: Annotated[str, Form(max_length=128)] = "",
) -> Response:
    key, plaintext = await service.issue_key(
        session, tenant_id=viewer.tenant.id, laundry_id=laundry_id, name=name,
        created_by=viewer.user.username, clock=runtime.clock,
    )  # fmt: skip
    return await _detail(request, viewer, session, laundry_id, minted=key, plaintext=plaintext)


@router.post("/{laundry_id}/keys/{key_id}/rotate")
async def rotate_key(
    request: Request,
    laundry_id: IdPath,
    key_id: IdPath,
    viewer: Writer,
    session: Session,
    runtime: RuntimeDep,
) -> Response:
    key, plaintext = await service.rotate_key(
        session, tenant_id=viewer.tenant.id, laundry_id=laundry_id, key_id=key_id,
        created_by=viewer.user.username, clock=runtime.clock,
    )  # fmt: skip
    return await _detail(request, viewer, session, laundry_id, minted=key, plaintext=plaintext)


@router.post("/{laundry_id}/keys/{key_id}/revoke")
async def revoke_key(
    laundry_id: IdPath, key_id: IdPath, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    await service.revoke_key(
        session, tenant_id=viewer.tenant.id, laundry_id=laundry_id, key_id=key_id,
        clock=runtime.clock,
    )  # fmt: skip
    return RedirectResponse(f"/app/laundries/{laundry_id}", status_code=303)
