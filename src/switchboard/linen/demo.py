"""Demo linen data for ``switchboard demo``: a catalogue with a bed set, a laundry with prices
and a key, three properties in two groups with par levels and vault entries, sheets across the
last and the current month (delivered, invoiced, confirmed, draft) and one invoice.

Everything goes through the same services as the Data API and the web app."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.kit.crypto import SecretBox
from switchboard.linen.groups import service as groups
from switchboard.linen.groups.schemas import GroupCreate
from switchboard.linen.invoices import service as invoices
from switchboard.linen.invoices.schemas import InvoiceMeta
from switchboard.linen.item_types import service as item_types
from switchboard.linen.item_types.schemas import ItemTypeCreate
from switchboard.linen.laundries import service as laundries
from switchboard.linen.laundries.schemas import LaundryCreate, PriceListIn
from switchboard.linen.properties import service as properties
from switchboard.linen.properties.schemas import PropertyCreate
from switchboard.linen.sheets import service as sheets
from switchboard.linen.sheets.schemas import DeliveryReport, SheetCreate
from switchboard.linen.vault import service as vault
from switchboard.linen.vault.schemas import VaultCreate
from switchboard.linen.web import pdf

ACTOR = "admin"
CATALOGUE = [
    ("DUVET_COVER_DOUBLE", "Duvet cover double", "bed", 900, 450),
    ("SHEET_DOUBLE", "Fitted sheet double", "bed", 700, 300),
    ("PILLOWCASE", "Pillowcase", "bed", 150, 80),
    ("TOWEL_BATH", "Bath towel", "bath", 500, 120),
    ("TOWEL_HAND", "Hand towel", "bath", 200, 60),
    ("BATH_MAT", "Bath mat", "bath", 400, 90),
    ("TEA_TOWEL", "Tea towel", "kitchen", 100, 40),
]
PROPERTIES = [
    ("SEA-01", "Sea View Apartment", "Porto", 1, "Key safe left of the door, code in the vault"),
    ("OLD-07", "Old Town Loft", "Porto", 1, "Leave linen with the concierge"),
    ("HILL-03", "Hillside Villa", "Sintra", 2, "Garage, side door"),
]


def _body(model: Any, **fields: Any) -> Any:
    return model.model_validate(fields)


async def create_demo_linen(
    session: AsyncSession, *, tenant_id: int, clock: Clock, box: SecretBox
) -> None:
    today = clock.now().date()
    this_month = today.replace(day=1)
    last_month = (this_month - dt.timedelta(days=1)).replace(day=1)
    kinds = {}
    for code, name, category, grams, _ in CATALOGUE:
        body = _body(ItemTypeCreate, code=code, name=name, category=category, weightGrams=grams)
        kinds[code] = await item_types.create(session, tenant_id=tenant_id, body=body, clock=clock)
    bed_set = await item_types.create(
        session, tenant_id=tenant_id, clock=clock,
        body=_body(ItemTypeCreate, code="SET_DOUBLE", name="Double bed set", category="bed",
                   unit="set", components=[
                       {"itemTypeId": kinds["DUVET_COVER_DOUBLE"].id, "qty": 1},
                       {"itemTypeId": kinds["SHEET_DOUBLE"].id, "qty": 1},
                       {"itemTypeId": kinds["PILLOWCASE"].id, "qty": 2}]),
    )  # fmt: skip
    laundry = await laundries.create(
        session, tenant_id=tenant_id, clock=clock,
        body=_body(LaundryCreate, name="Lavandaria Atlântico", contactName="Rita Sousa",
                   email="jobs@lavandaria.example", phone="+351 22 000 0000"),
    )  # fmt: skip
    await laundries.create_price_list(
        session, tenant_id=tenant_id, laundry_id=laundry.id, clock=clock,
        body=_body(PriceListIn, name="Standard", currency="EUR", validFrom=last_month.isoformat(),
                   perKg=350, deliveryFee=800, lateOrderSurcharge=1500,
                   items=[{"itemTypeId": kinds[c].id, "unitPrice": p}
                          for c, _, _, _, p in CATALOGUE]),
    )  # fmt: skip
    await laundries.issue_key(
        session, tenant_id=tenant_id, laundry_id=laundry.id, name="delivery van",
        created_by=ACTOR, clock=clock,
    )  # fmt: skip
    made = []
    for code, name, city, sets, note in PROPERTIES:
        par = [{"itemTypeId": bed_set.id, "qty": sets},
               {"itemTypeId": kinds["TOWEL_BATH"].id, "qty": 2 * sets + 2},
               {"itemTypeId": kinds["TOWEL_HAND"].id, "qty": 2 * sets},
               {"itemTypeId": kinds["BATH_MAT"].id, "qty": 1},
               {"itemTypeId": kinds["TEA_TOWEL"].id, "qty": 2}]  # fmt: skip
        prop = await properties.create(
            session, tenant_id=tenant_id, clock=clock,
            body=_body(PropertyCreate, code=code, name=name, timezone="Europe/Lisbon",
                       address={"city": city, "countryCode": "PT"}, bedrooms=sets,
                       bathrooms=1, maxGuests=2 * sets + 2,
                       beds=[{"bedType": "double", "count": sets}], linenPar=par,
                       defaultLaundryId=laundry.id, deliveryNote=note),
        )  # fmt: skip
        made.append(prop)
        await vault.create(
            session, tenant_id=tenant_id, actor=ACTOR, box=box, clock=clock,
            body=_body(VaultCreate, propertyId=prop.id, kind="key-safe", label="Key safe",
                       secret=f"{1000 + prop.id * 37 % 9000}"),
        )  # fmt: skip
    await groups.create(
        session, tenant_id=tenant_id, clock=clock,
        body=_body(GroupCreate, name="Porto", kind="region", propertyIds=[made[0].id, made[1].id]),
    )  # fmt: skip
    await groups.create(
        session, tenant_id=tenant_id, clock=clock,
        body=_body(GroupCreate, name="Sintra", kind="region", propertyIds=[made[2].id]),
    )  # fmt: skip
    delivered = []
    for offset, prop in zip((3, 9, 17, 24), [*made, made[0]], strict=True):
        sheet = await sheets.create(
            session, tenant_id=tenant_id, actor=ACTOR, clock=clock,
            body=_body(SheetCreate, propertyId=prop.id,
                       serviceDate=(last_month + dt.timedelta(days=offset)).isoformat()),
        )  # fmt: skip
        await sheets.confirm(
            session, tenant_id=tenant_id, sheet_id=sheet.id, actor=ACTOR, clock=clock
        )
        lines = (await sheets.lines_of(session, tenant_id=tenant_id, sheet_ids=[sheet.id]))[
            sheet.id
        ]
        report = _body(
            DeliveryReport,
            lines=[{"itemTypeId": x.item_type_id, "qtyDelivered": x.qty_ordered,
                    "qtyCollected": x.qty_ordered} for x in lines],
        )  # fmt: skip
        await sheets.report_delivery(
            session, tenant_id=tenant_id, sheet_id=sheet.id, body=report,
            actor=f"laundry:{laundry.id}", clock=clock, laundry_id=laundry.id,
        )  # fmt: skip
        delivered.append(sheet)
    invoiced = delivered[:3]
    net = sum(s.estimated_cost or 0 for s in invoiced)
    number = f"AT-{last_month:%Y%m}-001"
    document = pdf.control_sheet(
        number=number,
        facts=[("Laundry", laundry.name), ("Period", f"{last_month:%Y-%m}")],
        rows=[pdf.Row(s.number, [1, "", "", "", ""]) for s in invoiced],
    )
    meta = _body(
        InvoiceMeta, invoiceNumber=number, invoiceDate=this_month.isoformat(), currency="EUR",
        net=net, tax=net * 23 // 100, gross=net + net * 23 // 100,
        lines=[{"linenSheetId": s.id, "description": f"Linen service {s.number}", "qty": 1,
                "unitPrice": s.estimated_cost or 0, "net": s.estimated_cost or 0}
               for s in invoiced],
    )  # fmt: skip
    await invoices.receive(
        session, tenant_id=tenant_id, laundry_id=laundry.id, meta=meta, pdf=document,
        filename=f"{number}.pdf", source=invoices.LAUNDRY_API, clock=clock,
    )  # fmt: skip
    for offset, prop in ((0, made[0]), (0, made[1]), (2, made[2])):
        sheet = await sheets.create(
            session, tenant_id=tenant_id, actor=ACTOR, clock=clock,
            body=_body(SheetCreate, propertyId=prop.id,
                       serviceDate=(today + dt.timedelta(days=offset)).isoformat()),
        )  # fmt: skip
        if offset == 0:
            await sheets.confirm(
                session, tenant_id=tenant_id, sheet_id=sheet.id, actor=ACTOR, clock=clock
            )
