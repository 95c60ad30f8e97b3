from __future__ import annotations

from pydantic import Field

from switchboard.kit.schemas import Page, Schema, one_of
from switchboard.platform.numbers.models import MODES, VISIBILITIES


class NumberItem(Schema):
    """A virtual number (spec 2.5). The AI key and system prompt are never part of it."""

    name: str
    number: str = Field(description="Inbound number or extension")
    mode: str = one_of(MODES)
    voice: str
    language: str
    save_transcripts: bool
    max_duration_sec: int = Field(description="Maximum talk time; default 3500")
    visibility: str = one_of(VISIBILITIES)


class NumberPage(Page[NumberItem]):
    tenant: str = Field(description="The caller's tenant name")
