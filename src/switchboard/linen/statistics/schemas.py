from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from switchboard.kit.schemas import Page, Schema
from switchboard.linen.common import Money

GroupBy = Literal["month", "property", "laundry", "group"]


class ItemCount(Schema):
    item_type_id: int
    code: str
    qty: int


class StatisticsRow(Schema):
    period: str
    key: str
    label: str
    sheets: int
    items_by_type: list[ItemCount] = Field(
        description="Per item type, delivered quantities once delivered, ordered before; a set "
        "counts as the set, as it was ordered, not as its pieces"
    )
    weight_kg: float = Field(description="The sum of the sheets' `weightKg`")
    estimated_cost: list[Money] = Field(
        description="The sum of the sheets' `estimatedCost`, one entry per currency"
    )
    invoiced_cost: list[Money]


class StatisticsPage(Page[StatisticsRow]):
    group_by: GroupBy
    date_from: dt.date
    date_to: dt.date
