"""Pure rules: the state machines, the PDF check, balances and estimates."""

from __future__ import annotations

import datetime as dt

import pytest

from switchboard.kit.errors import Conflict, PayloadTooLarge
from switchboard.linen.invoices import service as invoices
from switchboard.linen.item_types.models import ItemType
from switchboard.linen.laundries.models import PriceList
from switchboard.linen.sheets import service as sheets
from switchboard.linen.sheets.models import SheetLine
from tests.linen.helpers import make_pdf

SHEET_STATES = ("draft", "confirmed", "delivered", "invoiced", "cancelled")
ALLOWED = {
    ("draft", "confirm"): "confirmed",
    ("draft", "cancel"): "cancelled",
    ("confirmed", "cancel"): "cancelled",
    ("confirmed", "deliver"): "delivered",
    ("delivered", "deliver"): "delivered",
    ("delivered", "invoice"): "invoiced",
}


@pytest.mark.parametrize("state", SHEET_STATES)
@pytest.mark.parametrize("action", ["confirm", "cancel", "deliver", "invoice"])
def test_sheet_state_machine(state: str, action: str) -> None:
    expected = ALLOWED.get((state, action))
    if expected is None:
        with pytest.raises(Conflict):
            sheets.next_status(state, action)
    else:
        assert sheets.next_status(state, action) == expected


def test_invoice_state_machine() -> None:
    assert invoices.next_status("received", "approve") == "approved"
    assert invoices.next_status("disputed", "approve") == "approved"
    assert invoices.next_status("approved", "dispute") == "disputed"
    assert invoices.next_status("approved", "pay") == "paid"
    for state, action in [("received", "pay"), ("paid", "dispute"), ("paid", "approve"),
                          ("disputed", "pay"), ("disputed", "dispute")]:  # fmt: skip
        with pytest.raises(Conflict):
            invoices.next_status(state, action)


def test_pdf_check() -> None:
    invoices.check_pdf(make_pdf())
    for broken in (
        b"",
        b"PK\x03\x04 a zip",
        b"%PDF-1.7\n",
        make_pdf().replace(b"startxref", b"startxraf"),
        make_pdf()[:-40] + b"startxref\n999999\n%%EOF\n",
    ):
        with pytest.raises(invoices.UnsupportedMediaType):
            invoices.check_pdf(broken)
    with pytest.raises(PayloadTooLarge):
        invoices.check_pdf(b"%PDF-" + b"0" * invoices.MAX_PDF_BYTES)
    assert invoices.safe_filename("../../etc/pass wd\r\n.pdf") == "pass wd__.pdf"


def test_balance_and_estimate() -> None:
    line = SheetLine(item_type_id=1, qty_ordered=4, qty_delivered=3, qty_rejected=1)
    assert sheets.balance_due(line) == 2
    kinds = {1: ItemType(id=1, weight_grams=500), 2: ItemType(id=2, weight_grams=1000)}
    prices = PriceList(
        items=[{"itemTypeId": 1, "unitPrice": 100}], per_kg=250, delivery_fee=50,
        late_order_surcharge=70,
    )  # fmt: skip
    lines = [line, SheetLine(item_type_id=2, qty_ordered=2, qty_delivered=2, qty_rejected=0)]
    assert sheets.estimate(lines, kinds, prices, delivered=False, late=False) == (
        4000,
        400 + 500 + 50,
    )
    assert sheets.estimate(lines, kinds, prices, delivered=True, late=True) == (
        3000,
        200 + 500 + 50 + 70,
    )
    assert sheets.estimate(lines, kinds, None, delivered=False, late=False) == (4000, None)


def test_late_orders_use_the_property_time_zone() -> None:
    import datetime as dt

    evening_utc = dt.datetime(2026, 3, 9, 22, 30, tzinfo=dt.UTC)  # 10 March in Sydney
    service = dt.date(2026, 3, 11)
    assert sheets.is_late(evening_utc, service, "UTC") is False
    assert sheets.is_late(evening_utc, service, "Australia/Sydney") is True


def test_a_late_order_is_judged_for_any_date_a_row_may_hold() -> None:
    """Rows stored before decision 0520 may hold any date: the rule counts days between the
    two, and neither end of the calendar is a 500."""
    now = dt.datetime(2026, 1, 9, 23, 30, tzinfo=dt.UTC)
    assert sheets.is_late(now, dt.date.min, "UTC")
    assert not sheets.is_late(now, dt.date.max, "UTC")
    assert sheets.is_late(now, dt.date(2026, 1, 10), "UTC")  # the day before
    assert not sheets.is_late(now, dt.date(2026, 1, 11), "UTC")
    assert sheets.is_late(now, dt.date(2026, 1, 11), "Asia/Tokyo")  # the 10th there
