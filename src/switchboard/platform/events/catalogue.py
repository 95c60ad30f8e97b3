"""The exact event names of spec 6.2, plus the admin test event."""

from __future__ import annotations

CALL_STARTED = "call.started"
CALL_ANSWERED = "call.answered"
CALL_TRANSFERRED = "call.transferred"
CALL_ENDED = "call.ended"
OUTBOUND_AI_FINISHED = "outbound-ai.finished"
TRANSCRIPT_SAVED = "transcript.saved"
SHARE_CREATED = "share.created"
SHARE_VIEWED = "share.viewed"
SHARE_REVOKED = "share.revoked"
ROOM_CASCADE_PROMOTED = "room.cascade.promoted"
ROOM_CASCADE_DEMOTED = "room.cascade.demoted"
ROOM_CASCADE_FAILED = "room.cascade.failed"
ROOM_PEER_JOINED = "room.peer.joined"
ROOM_PEER_LEFT = "room.peer.left"
ROOM_BANDWIDTH_DEGRADED = "room.bandwidth.degraded"
SFU_OFFER_RECEIVED = "sfu.offer.received"
SFU_PUBLISHER_CONNECTED = "sfu.publisher.connected"
SFU_SUBSCRIBE_RECEIVED = "sfu.subscribe.received"
SFU_SUBSCRIBER_CONNECTED = "sfu.subscriber.connected"
ROOM_CLIENT_PREFERENCE_CHANGED = "room.client.preference.changed"
WEBHOOK_TEST = "webhook.test"

ALL_EVENTS: tuple[str, ...] = (
    CALL_STARTED,
    CALL_ANSWERED,
    CALL_TRANSFERRED,
    CALL_ENDED,
    OUTBOUND_AI_FINISHED,
    TRANSCRIPT_SAVED,
    SHARE_CREATED,
    SHARE_VIEWED,
    SHARE_REVOKED,
    ROOM_CASCADE_PROMOTED,
    ROOM_CASCADE_DEMOTED,
    ROOM_CASCADE_FAILED,
    ROOM_PEER_JOINED,
    ROOM_PEER_LEFT,
    ROOM_BANDWIDTH_DEGRADED,
    SFU_OFFER_RECEIVED,
    SFU_PUBLISHER_CONNECTED,
    SFU_SUBSCRIBE_RECEIVED,
    SFU_SUBSCRIBER_CONNECTED,
    ROOM_CLIENT_PREFERENCE_CHANGED,
    WEBHOOK_TEST,
)
