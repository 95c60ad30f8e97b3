"""Item types (sets and their components) and property groups: listed for every role, created
and edited by admins."""

from __future__ import annotations

from functools import partial
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from switchboard.linen.common import IdPath
from switchboard.linen.groups import service as groups
from switchboard.linen.groups.schemas import GroupCreate, GroupUpdate
from switchboard.linen.item_types import service as item_types
from switchboard.linen.item_types.schemas import ItemTypeCreate, ItemTypeUpdate
from switchboard.linen.web.deps import Editor, ViewerDep, Writer, render
from switchboard.linen.web.forms import form_flag, quantities, read_body, see
from switchboard.linen.web.pages._shared import all_groups, all_item_types, all_properties
from switchboard.runtime import RuntimeDep, Session
from switchboard.web.pages import form_int, form_text

router = APIRouter(prefix="/catalogue")
BACK = "/app/catalogue"


@router.get("")
async def catalogue_page(request: Request, viewer: ViewerDep, session: Session) -> Response:
    tenant_id = viewer.tenant.id
    kinds = await all_item_types(session, tenant_id)
    group_rows = await all_groups(session, tenant_id)
    members = await groups.property_ids_of(
        session, tenant_id=tenant_id, group_ids=[g.id for g in group_rows]
    )
    props = await all_properties(session, tenant_id)
    return render(
        request, "catalogue.html", viewer, kinds=kinds, by_id={k.id: k for k in kinds},
        groups=group_rows, members=members, properties={p.id: p for p in props},
    )  # fmt: skip


def _item_type_body(form: Any, *, editing: bool) -> dict[str, Any]:
    """The Data API's item type body: a set when any component has a quantity."""
    components = quantities(form, "part_")
    body: dict[str, Any] = {
        "code": str(form.get("code", "")),
        "name": str(form.get("name", "")),
        "category": str(form.get("category", "other")),
        "size": form_text(form.get("size")),
        "unit": "set" if components else "piece",
        "weightGrams": form_int(form.get("weightGrams"), "weightGrams", default=0),
        "components": components,
    }
    if editing:
        body["active"] = form_flag(form, "active")
    return body


@router.post("/item-types")
async def create_item_type(
    request: Request, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    body = await read_body(request, ItemTypeCreate, partial(_item_type_body, editing=False))
    await item_types.create(session, tenant_id=viewer.tenant.id, body=body, clock=runtime.clock)
    return see(BACK)


@router.get("/item-types/{item_type_id}/edit")
async def edit_item_type_page(
    request: Request, item_type_id: IdPath, viewer: Editor, session: Session
) -> Response:
    kind = await item_types.get(session, tenant_id=viewer.tenant.id, item_type_id=item_type_id)
    counts = {int(c["itemTypeId"]): int(c["qty"]) for c in kind.components}
    # Active pieces, and the retired ones the set already holds (decision 0523).
    parts = [
        k for k in await all_item_types(session, viewer.tenant.id)
        if k.unit != "set" and k.id != kind.id and (k.active or k.id in counts)
    ]  # fmt: skip
    return render(request, "item_type_form.html", viewer, kind=kind, parts=parts, counts=counts)


@router.post("/item-types/{item_type_id}")
async def update_item_type(
    request: Request, item_type_id: IdPath, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    body = await read_body(request, ItemTypeUpdate, partial(_item_type_body, editing=True))
    await item_types.update(
        session, tenant_id=viewer.tenant.id, item_type_id=item_type_id, body=body,
        clock=runtime.clock,
    )  # fmt: skip
    return see(BACK)


def _group_body(form: Any) -> dict[str, Any]:
    return {
        "name": str(form.get("name", "")),
        "kind": str(form.get("kind", "")),
        "notes": str(form.get("notes", "")),
        "propertyIds": [form_int(v, "propertyIds") for v in form.getlist("propertyIds")],
    }


@router.post("/groups")
async def create_group(
    request: Request, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    body = await read_body(request, GroupCreate, _group_body)
    await groups.create(session, tenant_id=viewer.tenant.id, body=body, clock=runtime.clock)
    return see(BACK)


@router.get("/groups/{group_id}/edit")
async def edit_group_page(
    request: Request, group_id: IdPath, viewer: Editor, session: Session
) -> Response:
    group = await groups.get(session, tenant_id=viewer.tenant.id, group_id=group_id)
    members = await groups.property_ids_of(
        session, tenant_id=viewer.tenant.id, group_ids=[group.id]
    )
    return render(
        request, "group_form.html", viewer, group=group, members=set(members.get(group.id, [])),
        properties=await all_properties(session, viewer.tenant.id),
    )  # fmt: skip


@router.post("/groups/{group_id}")
async def update_group(
    request: Request, group_id: IdPath, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    body = await read_body(request, GroupUpdate, _group_body)
    await groups.update(
        session, tenant_id=viewer.tenant.id, group_id=group_id, body=body, clock=runtime.clock
    )
    return see(BACK)
