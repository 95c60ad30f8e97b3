from __future__ import annotations

import datetime as dt
from typing import Literal

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
    items_by_type: list[ItemCount]
    weight_kg: float
    estimated_cost: list[Money]
    invoiced_cost: list[Money]


class StatisticsPage(Page[StatisticsRow]):
    group_by: GroupBy
    date_from: dt.date
    date_to: dt.date
