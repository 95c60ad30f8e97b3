"""A price list or an invoice is in a currency that is money (decision 0522): ISO 4217's codes
for no currency, testing, metals and units of account are refused as an unknown code is."""

from __future__ import annotations

import json
from typing import Any

import pycountry
from httpx import Response

from tests.linen.helpers import World, invoice_meta, make_pdf

REFUSED = {
    "XXX", "XTS", "XAU", "XAG", "XPD", "XPT", "XDR", "XUA", "XAD", "XSU",
    "XBA", "XBB", "XBC", "XBD",
}  # fmt: skip
# The X-codes of money that laundries invoice in: CFA francs, East Caribbean dollar, Caribbean
# guilder, CFP franc.
MONEY = {"XAF", "XOF", "XCD", "XCG", "XPF"}


async def _recorded_by_hand(world: World, meta: dict[str, Any]) -> Response:
    metadata = json.dumps({**meta, "laundryId": world.laundry})
    return await world.portal.client.post(
        "/api/v1/invoices",
        files={
            "file": ("scan.pdf", make_pdf(), "application/pdf"),
            "metadata": (None, metadata, "application/json"),
        },
        headers=await world.portal.auth("admin"),
    )


async def test_codes_for_what_is_not_money_are_refused_and_change_nothing(world: World) -> None:
    portal = world.portal
    prices = f"/v1/laundries/{world.laundry}/price-lists"
    before = (await portal.get(prices)).json()["data"]
    price_list = before[0]
    on_the_list = {currency.alpha_3 for currency in pycountry.currencies}
    for code in sorted(REFUSED):
        assert code in on_the_list, code  # an ISO 4217 code, refused by choice
        made = await portal.post(prices, {"currency": code, "validFrom": "2027-01-01"})
        whole = {**price_list, "currency": code}
        replaced = await portal.put(f"{prices}/{price_list['id']}", whole)
        meta = {**invoice_meta("INV-1", []), "currency": code}
        uploaded = await world.upload(meta)
        by_hand = await _recorded_by_hand(world, meta)
        for answer, field in (
            (made, "currency"),
            (replaced, "currency"),
            (uploaded, "metadata: currency"),
            (by_hand, "metadata: currency"),
        ):
            assert (answer.status_code, answer.json()["error"]) == (400, "invalid_request"), code
            description = answer.json()["error_description"]
            assert description.startswith(f"{field}: '{code}' is ISO 4217's code for "), description
            assert description.endswith(", not a currency to price or invoice in"), description
    for code, what in (("XXX", "no currency"), ("XTS", "testing"), ("XAU", "gold")):
        refused = await portal.post(prices, {"currency": code, "validFrom": "2027-01-01"})
        assert refused.json() == {
            "error": "invalid_request",
            "error_description": f"currency: '{code}' is ISO 4217's code for {what}, not a "
            "currency to price or invoice in",
        }
    assert (await portal.get(prices)).json()["data"] == before
    assert (await portal.get("/v1/invoices")).json()["total"] == 0
    assert (await portal.client.get(
        "/api/laundry/invoices", headers=world.laundry_headers()
    )).json()["total"] == 0  # fmt: skip


async def test_the_money_of_currency_unions_is_accepted_and_documented(world: World) -> None:
    portal = world.portal
    prices = f"/v1/laundries/{world.laundry}/price-lists"
    for code in sorted(MONEY):
        made = await portal.post(prices, {"currency": code, "validFrom": "2027-01-01"})
        assert (made.status_code, made.json()["currency"]) == (201, code), made.text
    uploaded = await world.upload({**invoice_meta("INV-XOF", []), "currency": "XOF"})
    assert (uploaded.status_code, uploaded.json()["currency"]) == (201, "XOF"), uploaded.text
    by_hand = await _recorded_by_hand(world, {**invoice_meta("INV-XAF", []), "currency": "XAF"})
    assert (by_hand.status_code, by_hand.json()["currency"]) == (201, "XAF"), by_hand.text

    document = (await portal.client.get("/api/openapi.json")).json()
    schemas = document["components"]["schemas"]
    x_codes = {c.alpha_3 for c in pycountry.currencies if c.alpha_3.startswith("X")}
    # Every X-code of the list is decided one way or the other: a new one is noticed here.
    assert x_codes == REFUSED | MONEY
    enum = set(schemas["PriceListIn"]["properties"]["currency"]["enum"])
    assert not enum & REFUSED
    assert {"EUR", "CHF", "JPY", "CLF", *MONEY} <= enum
