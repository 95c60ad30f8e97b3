"""A laundry's price lists: create, edit (the Data API's PUT: the whole list), delete.

Amounts are typed in major units (``2.50``) and kept in minor units, as the Data API keeps them.
Every item type with a unit price is on the list; a blank price leaves it off."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from switchboard.kit.schemas import FORM
from switchboard.linen.common import IdPath
from switchboard.linen.laundries import service
from switchboard.linen.laundries.models import PriceList
from switchboard.linen.laundries.schemas import PriceListIn
from switchboard.linen.web.deps import Editor, Viewer, Writer, render
from switchboard.linen.web.forms import (
    ask_first,
    confirmed,
    form_date,
    form_grid,
    form_money,
    see,
)
from switchboard.linen.web.pages._shared import all_item_types
from switchboard.runtime import RuntimeDep, Session

router = APIRouter(prefix="/laundries/{laundry_id}/prices")


def _back(laundry_id: int) -> Response:
    return see(f"/app/laundries/{laundry_id}#price-lists")


def _body(form: Any) -> PriceListIn:
    lost = form_grid(form, "lost_")
    items = []
    for item_type_id, value in form_grid(form, "price_").items():
        price = form_money(value, f"price_{item_type_id}")
        if price is not None:
            lost_price = form_money(lost.get(item_type_id), f"lost_{item_type_id}")
            items.append(
                {"itemTypeId": item_type_id, "unitPrice": price, "lostItemPrice": lost_price}
            )
    body = {
        "name": str(form.get("name", "")),
        "currency": str(form.get("currency", "")).strip().upper(),
        "validFrom": form_date(form.get("validFrom"), "validFrom"),
        "validTo": form_date(form.get("validTo"), "validTo"),
        "perKg": form_money(form.get("perKg"), "perKg"),
        "deliveryFee": form_money(form.get("deliveryFee"), "deliveryFee") or 0,
        "lateOrderSurcharge": form_money(form.get("lateOrderSurcharge"), "lateOrderSurcharge") or 0,
        "items": items,
    }
    return PriceListIn.model_validate(body, context=FORM)


async def _form(
    request: Request, viewer: Viewer, session: Session, laundry_id: int, prices: PriceList | None
) -> Response:
    laundry = await service.get(session, tenant_id=viewer.tenant.id, laundry_id=laundry_id)
    rows = {int(i["itemTypeId"]): i for i in (prices.items if prices else [])}
    return render(
        request, "price_list_form.html", viewer, laundry=laundry, prices=prices, rows=rows,
        kinds=await all_item_types(session, viewer.tenant.id),
    )  # fmt: skip


@router.get("/new")
async def new_page(
    request: Request, laundry_id: IdPath, viewer: Editor, session: Session
) -> Response:
    return await _form(request, viewer, session, laundry_id, None)


@router.post("")
async def create(
    request: Request, laundry_id: IdPath, viewer: Writer, session: Session, runtime: RuntimeDep
) -> Response:
    await service.create_price_list(
        session, tenant_id=viewer.tenant.id, laundry_id=laundry_id,
        body=_body(await request.form()), clock=runtime.clock,
    )  # fmt: skip
    return _back(laundry_id)


@router.get("/{price_list_id}/edit")
async def edit_page(
    request: Request, laundry_id: IdPath, price_list_id: IdPath, viewer: Editor, session: Session
) -> Response:
    prices = await service.get_price_list(
        session, tenant_id=viewer.tenant.id, laundry_id=laundry_id, price_list_id=price_list_id
    )
    return await _form(request, viewer, session, laundry_id, prices)


@router.post("/{price_list_id}")
async def replace(
    request: Request,
    laundry_id: IdPath,
    price_list_id: IdPath,
    viewer: Writer,
    session: Session,
    runtime: RuntimeDep,
) -> Response:
    await service.replace_price_list(
        session, tenant_id=viewer.tenant.id, laundry_id=laundry_id, price_list_id=price_list_id,
        body=_body(await request.form()), clock=runtime.clock,
    )  # fmt: skip
    return _back(laundry_id)


@router.post("/{price_list_id}/delete")
async def delete(
    request: Request,
    laundry_id: IdPath,
    price_list_id: IdPath,
    viewer: Writer,
    session: Session,
    runtime: RuntimeDep,
) -> Response:
    """Asks first: deleting a price list also recalculates the estimates it priced."""
    if not confirmed(await request.form()):
        laundry = await service.get(session, tenant_id=viewer.tenant.id, laundry_id=laundry_id)
        prices = await service.get_price_list(
            session, tenant_id=viewer.tenant.id, laundry_id=laundry_id,
            price_list_id=price_list_id,
        )  # fmt: skip
        until = prices.valid_to.isoformat() if prices.valid_to else "open-ended"
        named = f"the price list {prices.name}" if prices.name else "the price list"
        return ask_first(
            request, viewer,
            question=f"Delete {named} of {laundry.name}?",
            consequence=(
                f"The list in {prices.currency} from {prices.valid_from.isoformat()} to {until} "
                "is deleted for good. The draft, confirmed and delivered sheets it priced are "
                "re-estimated from whatever list then applies (none: no estimate); invoiced and "
                "cancelled sheets keep their figures."
            ),
            button="Delete the price list", back=f"/app/laundries/{laundry_id}#price-lists",
        )  # fmt: skip
    await service.delete_price_list(
        session, tenant_id=viewer.tenant.id, laundry_id=laundry_id, price_list_id=price_list_id,
        clock=runtime.clock,
    )  # fmt: skip
    return _back(laundry_id)
