"""Properties: list with search and group filter; detail with par levels, beds, delivery note,
running balance, sheets and vault entries; create and edit."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from switchboard.linen.groups import service as groups
from switchboard.linen.item_types.models import ItemType
from switchboard.linen.properties import service
from switchboard.linen.properties.models import Property
from switchboard.linen.properties.schemas import ZONES, PropertyCreate, PropertyUpdate
from switchboard.linen.sheets import service as sheets
from switchboard.linen.sheets.repository import SheetFilter
from switchboard.linen.vault import service as vault
from switchboard.linen.web.deps import Editor, ViewerDep, Writer, render
from switchboard.linen.web.forms import form_flag, quantities, read_body, see
from switchboard.linen.web.pages._shared import (
    ALL,
    all_groups,
    all_item_types,
    all_laundries,
    laundry_choices,
    sheets_where,
)
from switchboard.runtime import RuntimeDep, Session
from switchboard.web.pages import form_int

router = APIRouter(prefix="/properties")


async def _choices(session: AsyncSession, tenant_id: int) -> dict[str, Any]:
    group_rows = await all_groups(session, tenant_id)
    laundry_rows = await all_laundries(session, tenant_id)
    return {
        "groups": group_rows,
        "laundries": laundry_rows,
        "catalogue": await all_item_types(session, tenant_id),
        "zones": ZONES,
    }


@router.get("")
async def list_page(
    request: Request, viewer: ViewerDep, session: Session, q: str = "", group: str = ""
) -> Response:
    group_id = form_int(group, "group")
    rows, total = await service.list_properties(
        session, tenant_id=viewer.tenant.id, active=None, group_id=group_id, laundry_id=None,
        q=q or None, paging=ALL, sort="code",
    )  # fmt: skip
    return render(
        request, "properties.html", viewer, rows=rows, total=total, q=q, group_id=group_id,
        **await _choices(session, viewer.tenant.id),
    )  # fmt: skip


def _par_choices(catalogue: list[ItemType], prop: Property | None) -> list[ItemType]:
    """The item types a form offers as par levels: the active ones, and those the property
    already lists, retired since (decision 0524), so that saving keeps them."""
    listed = {int(p["itemTypeId"]) for p in prop.linen_par} if prop else set()
    return [kind for kind in catalogue if kind.active or kind.id in listed]


@router.get("/new")
async def new_page(request: Request, viewer: Editor, session: Session) -> Response:
    choices = await _choices(session, viewer.tenant.id)
    return render(
        request, "property_form.html", viewer, prop=None, group_ids=[], **choices,
        offered=laundry_choices(choices["laundries"], None),
        par_kinds=_par_choices(choices["catalogue"], None),
    )  # fmt: skip


def _body(form: Any) -> dict[str, Any]:
    """The Data API's property body from the form (camelCase, as the API reads it), validated
    by the API's schema. A field the form does not carry is left out (unchanged on an edit);
    the *active* box, like every checkbox, is unticked when absent."""
    beds = []
    for bed_type in ("single", "double", "queen", "king", "sofa"):
        count = form_int(form.get(f"bed_{bed_type}"), bed_type, default=0) or 0
        if count > 0:
            beds.append({"bedType": bed_type, "count": count})
    address = {k: str(form.get(k, "")) for k in ("street", "postalCode", "city")}
    country = str(form.get("countryCode", "")).strip()
    if country:
        address["countryCode"] = country
    body: dict[str, Any] = {
        "code": str(form.get("code", "")),
        "name": str(form.get("name", "")),
        "active": form_flag(form, "active"),
        "deliveryNote": str(form.get("deliveryNote", "")),
        "notes": str(form.get("notes", "")),
        "address": address,
        "defaultLaundryId": form_int(form.get("defaultLaundryId"), "defaultLaundryId"),
        "groupIds": [form_int(g, "groupIds") for g in form.getlist("groupIds")],
        "linenPar": quantities(form, "par_"),
        "beds": beds,
    }
    if "externalRef" in form:
        body["externalRef"] = str(form["externalRef"]).strip()
    if "timezone" in form:
        body["timezone"] = str(form["timezone"]).strip()  # the API's IANA list decides
    for number in ("bedrooms", "bathrooms", "maxGuests"):
        if number in form:
            body[number] = form_int(form[number], number, default=0)
    return body


@router.post("")
async def create(
    request: Request, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    body = await read_body(request, PropertyCreate, _body)
    prop = await service.create(session, tenant_id=viewer.tenant.id, body=body, clock=runtime.clock)
    return see(f"/app/properties/{prop.id}")


@router.get("/{property_id}")
async def detail_page(
    request: Request, property_id: int, viewer: ViewerDep, session: Session, runtime: RuntimeDep
) -> Response:
    tenant_id = viewer.tenant.id
    prop = await service.get(session, tenant_id=tenant_id, property_id=property_id)
    entries, _ = await vault.list_entries(
        session, tenant_id=tenant_id, property_id=prop.id, group_id=None, kind=None,
        paging=ALL, sort=None,
    )  # fmt: skip
    choices = await _choices(session, tenant_id)
    group_ids = await groups.group_ids_of(session, tenant_id=tenant_id, property_ids=[prop.id])
    return render(
        request, "property.html", viewer, prop=prop,
        kinds={k.id: k for k in choices["catalogue"]},
        laundries={x.id: x for x in choices["laundries"]},
        offered=laundry_choices(choices["laundries"], None),
        groups=[g for g in choices["groups"] if g.id in group_ids.get(prop.id, [])],
        balance=await sheets.running_balance(
            session, tenant_id=tenant_id, property_id=prop.id, until=None
        ),
        sheets=await sheets_where(
            session, tenant_id, SheetFilter(property_id=prop.id), sort="-serviceDate,id"
        ),
        entries=entries, today=runtime.clock.now().date(),
    )  # fmt: skip


@router.get("/{property_id}/edit")
async def edit_page(
    request: Request, property_id: int, viewer: Editor, session: Session
) -> Response:
    prop: Property = await service.get(session, tenant_id=viewer.tenant.id, property_id=property_id)
    group_ids = await groups.group_ids_of(
        session, tenant_id=viewer.tenant.id, property_ids=[prop.id]
    )
    choices = await _choices(session, viewer.tenant.id)
    return render(
        request, "property_form.html", viewer, prop=prop, group_ids=group_ids.get(prop.id, []),
        **choices, offered=laundry_choices(choices["laundries"], prop.default_laundry_id),
        par_kinds=_par_choices(choices["catalogue"], prop),
    )  # fmt: skip


@router.post("/{property_id}")
async def update(
    request: Request, property_id: int, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    body = await read_body(request, PropertyUpdate, _body)
    await service.update(
        session, tenant_id=viewer.tenant.id, property_id=property_id, body=body,
        clock=runtime.clock,
    )  # fmt: skip
    return see(f"/app/properties/{property_id}")
