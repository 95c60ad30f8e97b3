"""One module per page of the linen web app; ``ROUTERS`` in navigation order."""

from __future__ import annotations

from fastapi import APIRouter

from switchboard.linen.web.pages import (
    catalogue,
    invoices,
    laundries,
    price_lists,
    properties,
    sheets,
    statistics,
    today,
    vault,
)

ROUTERS: list[APIRouter] = [
    today.router,
    properties.router,
    sheets.router,
    vault.router,
    invoices.router,
    laundries.router,
    price_lists.router,
    statistics.router,
    catalogue.router,
]
