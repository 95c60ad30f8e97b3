"""The SFU half of signaling: a peer's publisher and subscriber SDP, proxied to the bridge,
each outcome recorded as ``sfu.offer.received`` / ``sfu.subscribe.received``."""

from __future__ import annotations

from typing import Any

from switchboard.bridge import protocol
from switchboard.platform.bridging.client import RoomAnswer
from switchboard.platform.events import catalogue as ev
from switchboard.platform.rooms import schemas as msg
from switchboard.platform.rooms import service
from switchboard.platform.rooms.hub import LiveRoom, Peer
from switchboard.runtime import Runtime


def _outcome(answer: RoomAnswer) -> dict[str, Any]:
    return {
        "outcome": "answer" if answer.ok else "failed",
        "code": None if answer.ok else answer.code,
        "phase": answer.phase,
        "httpStatus": answer.http_status,
    }


async def _failed(peer: Peer, answer: RoomAnswer, **about: str) -> None:
    """``about``: what the failed request named (``publisherPeerId`` of a subscription)."""
    await peer.send({"type": "error", "code": answer.code or "sfu_failed",
                     "message": service.failure_text(answer), **about})  # fmt: skip


async def handle(runtime: Runtime, room: LiveRoom, peer: Peer, message: msg.Message) -> None:
    if room.mode != "sfu":
        # A request that crossed a demote (or a client that never saw a promote): the room's
        # media is on the mesh, the bridge holds nothing of it; asking would set up an SFU
        # connection nobody uses, and record it. Answered, not closed: the reference client
        # may still send its publisher offer while the room moves back to mesh.
        about = {"publisherPeerId": message.publisher_peer_id} if isinstance(
            message, msg.SfuSubscribeOffer | msg.SfuSubscribeAnswer) else {}  # fmt: skip
        await peer.send({"type": "error", "code": "mesh_mode",
                         "message": "the room is in mesh mode: no SFU request is made",
                         **about})  # fmt: skip
        return
    ref = {"tenant": room.tenant_name, "room": room.name}
    if isinstance(message, msg.SfuOffer):
        offer = protocol.PublisherOffer(**ref, peer_id=peer.peer_id, role=peer.role,
                                        sdp=message.sdp)  # fmt: skip
        answer = await service.bridge_room(
            runtime, protocol.ROOM_PUBLISHERS_PATH, offer, phase="publish"
        )
        await service.record(runtime, room, [(ev.SFU_OFFER_RECEIVED, {
            "room": room.name, "peerId": peer.peer_id, "role": peer.role,
            "offerLen": len(message.sdp.encode()), **_outcome(answer),
        })])  # fmt: skip
        if not answer.ok:
            await _failed(peer, answer)
            return
        # ``publisher-added`` follows once the SFU reports the feed connected (subscribing
        # before that is refused): ``service.bridge_connected``
        await peer.send({"type": "sfu-answer", "sdp": str(answer.body.get("sdp", ""))})
    elif isinstance(message, msg.SfuSubscribeOffer):
        request = protocol.SubscriberRequest(
            **ref, publisher_peer_id=message.publisher_peer_id, subscriber_peer_id=peer.peer_id
        )
        answer = await service.bridge_room(
            runtime, protocol.ROOM_SUBSCRIBERS_PATH, request, phase="subscribe"
        )
        sdp = str(answer.body.get("sdp", "")) if answer.ok else ""
        await service.record(runtime, room, [(ev.SFU_SUBSCRIBE_RECEIVED, {
            "room": room.name, "publisherPeerId": message.publisher_peer_id,
            "subscriberPeerId": peer.peer_id, "offerLen": len(sdp.encode()), **_outcome(answer),
        })])  # fmt: skip
        if not answer.ok:
            # ``unknown_peer`` here: the feed is not connected yet (``publisher-added`` follows)
            await _failed(peer, answer, publisherPeerId=message.publisher_peer_id)
            return
        await peer.send({"type": "sfu-subscribe-offer",
                         "publisherPeerId": message.publisher_peer_id, "sdp": sdp})  # fmt: skip
    elif isinstance(message, msg.SfuSubscribeAnswer):
        reply = protocol.SubscriberAnswer(
            **ref, publisher_peer_id=message.publisher_peer_id, subscriber_peer_id=peer.peer_id,
            sdp=message.sdp,
        )  # fmt: skip
        answer = await service.bridge_room(
            runtime, protocol.ROOM_SUBSCRIBER_ANSWER_PATH, reply, phase="answer"
        )
        if not answer.ok:
            await _failed(peer, answer)
