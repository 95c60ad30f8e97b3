"""Shared steps of the call tests."""

from __future__ import annotations

from typing import Any

from httpx import AsyncClient
from sqlalchemy import select

from switchboard.platform.bridging.client import bridge_for
from switchboard.platform.events.models import Event
from switchboard.runtime import Runtime

PROMPT = (
    "You are calling to confirm the dentist appointment on Tuesday at 10am. "
    "Ask whether the time still suits them. Offer Wednesday morning as an alternative."
)


def call_body(phone: str = "+14155550100", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "phone": phone,
        "email": "ops@example.com",
        "systemPrompt": PROMPT,
        "apiKey": "AIzaSy-test-key-123456",
    }
    body.update(extra)
    return body


async def settle(runtime: Runtime) -> None:
    """Wait until the simulated bridge has played every call to its end."""
    simulator = bridge_for(runtime).simulator
    assert simulator is not None
    await simulator.wait_idle()


async def events(runtime: Runtime, call_id: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    async with runtime.db.transaction() as session:
        rows = (await session.execute(select(Event).order_by(Event.id))).scalars().all()
    found = [(row.name, dict(row.payload)) for row in rows]
    if call_id is None:
        return found
    return [(name, data) for name, data in found if data.get("callId") == call_id]


async def place(client: AsyncClient, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    response = await client.post("/api.ashx/v1/calls", json=call_body(**body), headers=headers)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data
