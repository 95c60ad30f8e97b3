"""Laundries: list, create and edit, detail with price lists, and API keys (shown once, after
the redirect; rotate, revoke). The price-list forms are in ``price_lists``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from switchboard.kit.clock import iso_utc
from switchboard.linen.common import IdPath
from switchboard.linen.laundries import service
from switchboard.linen.laundries.schemas import LaundryCreate, LaundryUpdate
from switchboard.linen.web.deps import Editor, Viewer, ViewerDep, Writer, render
from switchboard.linen.web.forms import ask_first, confirmed, form_flag, read_body, see
from switchboard.linen.web.pages._shared import ALL, all_item_types, all_laundries
from switchboard.runtime import RuntimeDep, Session
from switchboard.web.flash import once_for, show_once

router = APIRouter(prefix="/laundries")


@router.get("")
async def list_page(request: Request, viewer: ViewerDep, session: Session) -> Response:
    rows = await all_laundries(session, viewer.tenant.id)
    return render(request, "laundries.html", viewer, laundries=rows)


@router.get("/new")
async def new_page(request: Request, viewer: Editor) -> Response:
    return render(request, "laundry_form.html", viewer, laundry=None)


def _body(form: Any) -> dict[str, Any]:
    """The Data API's laundry body from the form."""
    return {
        **{k: str(form.get(k, "")) for k in ("name", "contactName", "email", "phone", "vatId")},
        "address": {k: str(form.get(k, "")) for k in ("street", "postalCode", "city")}
        | {"countryCode": str(form.get("countryCode", "")).strip().upper()},
        "active": form_flag(form, "active"),
    }


@router.post("")
async def create(
    request: Request, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    body = await read_body(request, LaundryCreate, _body)
    row = await service.create(session, tenant_id=viewer.tenant.id, body=body, clock=runtime.clock)
    return see(f"/app/laundries/{row.id}")


@router.get("/{laundry_id}/edit")
async def edit_page(
    request: Request, laundry_id: IdPath, viewer: Editor, session: Session
) -> Response:
    laundry = await service.get(session, tenant_id=viewer.tenant.id, laundry_id=laundry_id)
    return render(request, "laundry_form.html", viewer, laundry=laundry)


@router.post("/{laundry_id}")
async def update(
    request: Request, laundry_id: IdPath, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    body = await read_body(request, LaundryUpdate, _body)
    await service.update(
        session, tenant_id=viewer.tenant.id, laundry_id=laundry_id, body=body, clock=runtime.clock
    )
    return see(f"/app/laundries/{laundry_id}")


@router.get("/{laundry_id}")
async def detail_page(
    request: Request, laundry_id: IdPath, viewer: ViewerDep, session: Session
) -> Response:
    """The laundry; once after a key is issued or rotated, the key's plaintext."""
    tenant_id = viewer.tenant.id
    laundry = await service.get(session, tenant_id=tenant_id, laundry_id=laundry_id)
    prices, _ = await service.list_price_lists(
        session, tenant_id=tenant_id, laundry_id=laundry.id, paging=ALL
    )
    keys, _ = await service.list_keys(
        session, tenant_id=tenant_id, laundry_id=laundry.id, paging=ALL
    )
    kinds = {k.id: k for k in await all_item_types(session, tenant_id)}
    once = await once_for(request, viewer.session)

    async def page(values: dict[str, str]) -> Response:
        minted = next((key for key in keys if str(key.id) == values.get("key")), None)
        return render(
            request, "laundry.html", viewer, laundry=laundry, prices=prices, keys=keys,
            kinds=kinds, minted=minted,
            plaintext=values.get("plaintext") if minted is not None else None,
        )  # fmt: skip

    return await once.show(page)


async def _show_key(
    request: Request,
    session: AsyncSession,
    viewer: Viewer,
    laundry_id: int,
    key_id: int,
    plaintext: str,
) -> Response:
    return await show_once(
        request,
        session,
        viewer.session,
        f"/app/laundries/{laundry_id}",
        key=str(key_id),
        plaintext=plaintext,
    )


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
    return await _show_key(request, session, viewer, laundry_id, key.id, plaintext)


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
    return await _show_key(request, session, viewer, laundry_id, key.id, plaintext)


@router.post("/{laundry_id}/keys/{key_id}/revoke")
async def revoke_key(
    request: Request,
    laundry_id: IdPath,
    key_id: IdPath,
    viewer: Writer,
    session: Session,
    runtime: RuntimeDep,
) -> Response:
    """Asks first: a revoked key stops working at once and for good."""
    if not confirmed(await request.form()):
        laundry = await service.get(session, tenant_id=viewer.tenant.id, laundry_id=laundry_id)
        key = await service.live_key(
            session, tenant_id=viewer.tenant.id, laundry_id=laundry_id, key_id=key_id
        )
        return ask_first(
            request, viewer,
            question=f"Revoke the key {key.prefix}\u2026 of {laundry.name}?",
            consequence=(
                f"The key {key.name or '(unnamed)'} was last used "
                f"{iso_utc(key.last_used_at) or 'never'}. "
                "Programs using it are refused from now on; a revoked key cannot be restored. "
                "The laundry's other keys keep working."
            ),
            button="Revoke the key", back=f"/app/laundries/{laundry_id}#keys",
        )  # fmt: skip
    await service.revoke_key(
        session, tenant_id=viewer.tenant.id, laundry_id=laundry_id, key_id=key_id,
        clock=runtime.clock,
    )  # fmt: skip
    return see(f"/app/laundries/{laundry_id}")
