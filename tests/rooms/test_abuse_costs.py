"""What one socket's frames may cost: a frame that changes nothing writes nothing, an SFU request
in mesh reaches no bridge, and the requests that write or reach the bridge draw on a bucket."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from switchboard.kit.clock import ManualClock
from switchboard.platform.events.models import Event
from switchboard.platform.rooms import repository
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from tests import factories
from tests.rooms.conftest import Client, Server
from tests.rooms.test_abuse import closed_with
from tests.rooms.test_signaling import join

BURST = 16  # four requests per peer of a full room (the rooms' tests allow 4 peers)
REFUSED = (1008, "more than 2 preference, admit or sfu-* requests per second")


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # the frame rate out of the way: the bucket of costly requests is what is measured here
    return settings.model_copy(
        update={"room_max_messages_per_second": 1000, "room_max_requests_per_second": 2}
    )


async def events(runtime: Runtime, prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
    async with runtime.db.transaction(read_only=True) as session:
        rows = (await session.scalars(select(Event).order_by(Event.id))).all()
    return [(row.name, row.payload) for row in rows if row.name.startswith(prefix)]


async def served(client: Client) -> None:
    """Every frame ``client`` sent before is handled and the socket is open: a relay to nobody
    is answered (frames of a socket are handled in order)."""
    await client.send(type="offer", to="p_nobody", sdp="v=0")
    assert (await client.expect("error"))["code"] == "unknown_peer"


async def test_an_unchanged_preference_writes_nothing_and_costs_nothing(
    server: Server, acme: factories.TenantFixture, runtime: Runtime
) -> None:
    ann = await join(server, acme.host, "Ann", pref="prefer-sfu")
    await ann.expect("welcome")
    for _ in range(3 * BURST):  # the same vote again: neither written nor counted
        await ann.send(type="preference", pref="prefer-sfu")
    await ann.send(type="preference", pref="auto")
    await ann.send(type="preference", pref="auto")
    await served(ann)
    changed = await events(runtime, "room.client.preference")
    assert [(data["prevPref"], data["newPref"]) for _, data in changed] == [("prefer-sfu", "auto")]
    await ann.ws.close()


async def test_requests_that_write_draw_on_a_bucket_refilled_by_the_clock(
    server: Server, acme: factories.TenantFixture, runtime: Runtime, clock: ManualClock
) -> None:
    flips = iter(["prefer-sfu", "auto"] * BURST * 2)
    ann = await join(server, acme.host, "Ann")
    await ann.expect("welcome")
    for _ in range(BURST):
        await ann.send(type="preference", pref=next(flips))
    await served(ann)
    clock.advance(1)  # two more
    for _ in range(2):
        await ann.send(type="preference", pref=next(flips))
    await served(ann)
    await ann.send(type="preference", pref=next(flips))
    assert await closed_with(ann) == REFUSED
    assert len(await events(runtime, "room.client.preference")) == BURST + 2
    # the next socket has a bucket of its own
    bob = await join(server, acme.host, "Bob")
    await bob.expect("welcome")
    await bob.send(type="preference", pref="prefer-mesh")
    await served(bob)
    await bob.ws.close()


async def test_sfu_requests_in_mesh_reach_no_bridge_and_write_nothing(
    server: Server, acme: factories.TenantFixture, runtime: Runtime
) -> None:
    # a bridge that would answer, were it asked: its refusal would be a code of its own
    runtime.settings = runtime.settings.model_copy(update={"bridge_url": "none"})
    ann = await join(server, acme.host, "Ann")
    await ann.expect("welcome")
    frames = [
        {"type": "sfu-offer", "sdp": "v=0 publisher"},
        {"type": "sfu-subscribe-offer", "publisherPeerId": "p_other"},
        {"type": "sfu-subscribe-answer", "publisherPeerId": "p_other", "sdp": "v=0 answer"},
    ]
    for _ in range(BURST):  # more than the bucket holds: none of them costs
        for frame in frames:
            await ann.send(**frame)
    for _ in range(BURST):
        for frame in frames:
            error = await ann.expect("error")
            assert error["code"] == "mesh_mode"
            assert error["message"] == "the room is in mesh mode: no SFU request is made"
            if frame["type"] != "sfu-offer":
                assert error["publisherPeerId"] == "p_other"
    await served(ann)
    assert await events(runtime, "sfu.") == []
    await ann.ws.close()


async def test_sfu_requests_on_the_sfu_draw_on_the_bucket(
    server: Server, acme: factories.TenantFixture, runtime: Runtime
) -> None:
    async with runtime.db.transaction() as session:
        row = await repository.get_or_create(
            session, tenant_id=acme.id, name="x", now=runtime.clock.now()
        )
        row.mode = "sfu"
    ann = await join(server, acme.host, "Ann")
    assert (await ann.expect("welcome"))["mode"] == "sfu"
    for _ in range(BURST):  # asked each time: the simulated bridge never promoted the room
        await ann.send(type="sfu-offer", sdp="v=0 publisher")
    for _ in range(BURST):
        assert (await ann.expect("error"))["code"] == "unknown_room"
    await ann.send(type="sfu-offer", sdp="v=0 publisher")
    assert await closed_with(ann) == REFUSED
    assert len(await events(runtime, "sfu.offer.received")) == BURST
