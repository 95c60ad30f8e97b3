from __future__ import annotations

from typing import Annotated

from pydantic import Field

from switchboard.kit.schemas import Schema, StrictInput
from switchboard.tenants.service import DOMAIN_PATTERN

Domain = Annotated[str, Field(max_length=255, pattern=DOMAIN_PATTERN)]


class TenantItem(Schema):
    name: str
    domains: list[str]
    primary: bool
    created_at_utc: str


class TenantCreate(StrictInput):
    name: str = Field(min_length=1, max_length=63, pattern=r"^[a-z0-9][a-z0-9-]*$")
    domains: list[Domain] = Field(min_length=1, max_length=20)
