"""The built-in simulated bridge's SFU (aiortc, in process): the same scenario as with Janus
(aiortc peers meet in mesh, the join-time promote moves them to the SFU make-before-break, media
keeps flowing) with the same ``sfu.*`` events at the webhook receiver, and its refusals."""

from __future__ import annotations

from typing import Any

import pytest

from switchboard.runtime import Runtime
from tests import factories
from tests.rooms.conftest import Client, Server
from tests.rooms.peers import three_peers_move_to_the_sfu
from tests.rooms.test_cascade import named, set_sfu


@pytest.mark.slow
@pytest.mark.alone  # media decoded by aiortc in this process: see test_sfu_janus.py
async def test_three_peers_move_to_the_simulated_sfu_with_media_flowing(
    server: Server, acme: factories.TenantFixture, hooks: Any, runtime: Runtime
) -> None:
    assert runtime.settings.bridge_url == ""  # the built-in simulated bridge
    await three_peers_move_to_the_sfu(server, acme, hooks, runtime)


async def _join(server: Server, host: str, name: str) -> tuple[Client, str]:
    client = Client(await server.peer(host, "x"))
    await client.send(type="join", name=name)
    return client, (await client.expect("welcome"))["peerId"]


async def test_the_simulated_sfu_refuses_a_publisher_that_does_not_publish(
    server: Server, acme: factories.TenantFixture, hooks: Any, runtime: Runtime
) -> None:
    await set_sfu(runtime, acme, AutoPromoteHumanCount="2")
    first, first_id = await _join(server, acme.host, "A")
    second, second_id = await _join(server, acme.host, "B")
    await _join(server, acme.host, "C")  # the third human: promote
    assert (await second.expect("mode"))["mode"] == "sfu"
    await first.send(type="sfu-subscribe-offer", publisherPeerId=second_id)
    refused = await first.expect("error")
    assert (refused["code"], refused["publisherPeerId"]) == ("unknown_peer", second_id)
    [subscribe] = named(await hooks(5), "sfu.subscribe.received")
    assert {k: v for k, v in subscribe.items() if k != "offerLen"} == {
        "room": "x", "publisherPeerId": second_id, "subscriberPeerId": first_id,
        "outcome": "failed", "code": "unknown_peer", "phase": "subscribe", "httpStatus": 404,
    }  # fmt: skip
