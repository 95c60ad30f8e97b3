"""Item types (sets and their components) and property groups: listed for every role, created by
admins."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from switchboard.kit.schemas import FORM
from switchboard.linen.groups import service as groups
from switchboard.linen.groups.schemas import GroupCreate
from switchboard.linen.item_types import service as item_types
from switchboard.linen.item_types.schemas import ItemTypeCreate
from switchboard.linen.properties import service as properties
from switchboard.linen.web.deps import ViewerDep, Writer, render
from switchboard.linen.web.pages._shared import ALL, all_item_types
from switchboard.runtime import RuntimeDep, Session
from switchboard.web.pages import form_int

router = APIRouter(prefix="/catalogue")


@router.get("")
async def catalogue_page(request: Request, viewer: ViewerDep, session: Session) -> Response:
    tenant_id = viewer.tenant.id
    kinds = await all_item_types(session, tenant_id)
    group_rows, _ = await groups.list_groups(
        session, tenant_id=tenant_id, kind=None, property_id=None, paging=ALL, sort="name"
    )
    members = await groups.property_ids_of(
        session, tenant_id=tenant_id, group_ids=[g.id for g in group_rows]
    )
    props, _ = await properties.list_properties(
        session, tenant_id=tenant_id, active=None, group_id=None, laundry_id=None, q=None,
        paging=ALL, sort="code",
    )  # fmt: skip
    return render(
        request, "catalogue.html", viewer, kinds=kinds, by_id={k.id: k for k in kinds},
        groups=group_rows, members=members, properties={p.id: p for p in props},
    )  # fmt: skip


@router.post("/item-types")
async def create_item_type(
    request: Request, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    form = await request.form()
    components = []
    for name, value in form.multi_items():
        qty = form_int(value, name, default=0) if name.startswith("part_") else 0
        if qty:
            components.append(
                {"itemTypeId": form_int(name.removeprefix("part_"), name), "qty": qty}
            )
    body: dict[str, Any] = {
        "code": str(form.get("code", "")),
        "name": str(form.get("name", "")),
        "category": str(form.get("category", "other")),
        "unit": "set" if components else "piece",
        "weightGrams": form_int(form.get("weightGrams"), "weightGrams", default=0),
        "components": components,
    }
    await item_types.create(
        session, tenant_id=viewer.tenant.id, body=ItemTypeCreate.model_validate(body, context=FORM),
        clock=runtime.clock,
    )  # fmt: skip
    return RedirectResponse("/app/catalogue", status_code=303)


@router.post("/groups")
async def create_group(
    request: Request, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    form = await request.form()
    body = GroupCreate.model_validate(
        {
            "name": str(form.get("name", "")),
            "kind": str(form.get("kind", "")),
            "propertyIds": [form_int(v, "propertyIds") for v in form.getlist("propertyIds")],
        },
        context=FORM,
    )
    await groups.create(session, tenant_id=viewer.tenant.id, body=body, clock=runtime.clock)
    return RedirectResponse("/app/catalogue", status_code=303)
