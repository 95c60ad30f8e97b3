"""Routing: the inbound and outbound tables (add, edit, delete, reorder) and their dry runs."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.datastructures import FormData
from starlette.responses import RedirectResponse, Response

from switchboard.console.deps import FormOperator, OperatorDep, notice_of, render
from switchboard.kit.schemas import FORM
from switchboard.platform.routing import service
from switchboard.platform.routing.schemas import (
    InboundRouteCreate,
    InboundRouteUpdate,
    OutboundRouteCreate,
    OutboundRouteUpdate,
)
from switchboard.runtime import Session
from switchboard.tenants.config import TenantConfig

router = APIRouter(prefix="/routing")

TABLE_LIMIT = 1000


def _text(form: FormData, name: str) -> str:
    return str(form.get(name, "")).strip()


def _trunks(form: FormData) -> list[str]:
    return [part.strip() for part in _text(form, "trunkIds").split(",") if part.strip()]


def _back(notice: str) -> Response:
    return RedirectResponse(f"/admin/routing?notice={notice}", status_code=303)


@router.get("")
async def routing_page(
    request: Request,
    operator: OperatorDep,
    session: Session,
    did: str = "",
    fromNumber: str = "",  # noqa: N803 (the query parameter's wire name)
    number: str = "",
) -> Response:
    tenant_id = operator.tenant.id
    inbound, _ = await service.list_inbound(
        session, tenant_id=tenant_id, limit=TABLE_LIMIT, offset=0
    )
    outbound, _ = await service.list_outbound(
        session, tenant_id=tenant_id, limit=TABLE_LIMIT, offset=0
    )
    default_trunk = TenantConfig.from_settings(operator.tenant.settings).default_trunk_id
    inbound_run = outbound_run = None
    if did.strip():
        inbound_run = await service.explain_inbound(
            session, tenant_id=tenant_id, did=did.strip(), from_number=fromNumber.strip() or None
        )
    if number.strip():
        outbound_run = await service.explain_outbound(
            session, tenant_id=tenant_id, number=number.strip(), default_trunk_id=default_trunk
        )
    return render(
        request, "routing.html", operator, inbound=inbound, outbound=outbound,
        default_trunk=default_trunk, did=did, from_number=fromNumber, number=number,
        inbound_run=inbound_run, outbound_run=outbound_run, notice=notice_of(request),
    )  # fmt: skip


@router.post("/inbound")
async def add_inbound(request: Request, operator: FormOperator, session: Session) -> Response:
    form = await request.form()
    body = InboundRouteCreate.model_validate(
        {"did": _text(form, "did"), "fromNumber": _text(form, "fromNumber"),
         "user": _text(form, "user")}, context=FORM
    )  # fmt: skip
    await service.create_inbound(
        session, tenant_id=operator.tenant.id, did=body.did, from_number=body.from_number or "",
        user=body.user,
    )  # fmt: skip
    return _back("created")


@router.post("/inbound/edit")
async def edit_inbound(request: Request, operator: FormOperator, session: Session) -> Response:
    form = await request.form()
    body = InboundRouteUpdate.model_validate({"user": _text(form, "user")}, context=FORM)
    await service.update_inbound(
        session, tenant_id=operator.tenant.id, did=_text(form, "did"),
        from_number=_text(form, "fromNumber"), user=body.user,
    )  # fmt: skip
    return _back("saved")


@router.post("/inbound/delete")
async def delete_inbound(request: Request, operator: FormOperator, session: Session) -> Response:
    form = await request.form()
    await service.delete_inbound(
        session, tenant_id=operator.tenant.id, did=_text(form, "did"),
        from_number=_text(form, "fromNumber"),
    )  # fmt: skip
    return _back("deleted")


@router.post("/inbound/move")
async def move_inbound(request: Request, operator: FormOperator, session: Session) -> Response:
    form = await request.form()
    await service.move_inbound(
        session, tenant_id=operator.tenant.id, did=_text(form, "did"),
        from_number=_text(form, "fromNumber"), up=_text(form, "direction") == "up",
    )  # fmt: skip
    return _back("saved")


@router.post("/outbound")
async def add_outbound(request: Request, operator: FormOperator, session: Session) -> Response:
    form = await request.form()
    body = OutboundRouteCreate.model_validate(
        {"match": _text(form, "match"), "trunkIds": _trunks(form)}, context=FORM
    )
    await service.create_outbound(
        session, tenant_id=operator.tenant.id, match=body.match, trunk_ids=body.trunk_ids
    )
    return _back("created")


@router.post("/outbound/edit")
async def edit_outbound(request: Request, operator: FormOperator, session: Session) -> Response:
    form = await request.form()
    body = OutboundRouteUpdate.model_validate({"trunkIds": _trunks(form)}, context=FORM)
    await service.update_outbound(
        session, tenant_id=operator.tenant.id, match=_text(form, "match"),
        trunk_ids=body.trunk_ids,
    )  # fmt: skip
    return _back("saved")


@router.post("/outbound/delete")
async def delete_outbound(request: Request, operator: FormOperator, session: Session) -> Response:
    form = await request.form()
    await service.delete_outbound(session, tenant_id=operator.tenant.id, match=_text(form, "match"))
    return _back("deleted")


@router.post("/outbound/move")
async def move_outbound(request: Request, operator: FormOperator, session: Session) -> Response:
    form = await request.form()
    await service.move_outbound(
        session, tenant_id=operator.tenant.id, match=_text(form, "match"),
        up=_text(form, "direction") == "up",
    )  # fmt: skip
    return _back("saved")
