"""One payload of every event as its fire site builds it (spec 6.2), for tests that emit events
without the change behind them: ``emit`` refuses anything else (decision 0215)."""

from __future__ import annotations

import copy
from typing import Any

_PEER = {
    "room": "town-hall",
    "peerId": "p-1",
    "name": "Ana",
    "role": "human",
    "verified": True,
    "ip": "203.0.113.7",
}
_OUTBOUND = {"callId": "oac-0123456789ab", "phone": "+14155550100", "displayName": "Ana"}
_SHARE = {"token": "\u2026a1b2c3d4", "file": "oac-0123456789ab.json"}
_SFU = {"outcome": "answer", "code": None, "phase": "publish", "httpStatus": 200}

SAMPLES: dict[str, dict[str, Any]] = {
    "call.started": {**_OUTBOUND, "direction": "outbound", "source": "outbound-ai"},
    "call.answered": {
        **_OUTBOUND,
        "trunkId": "trunk-1",
        "direction": "outbound",
        "source": "outbound-ai",
        "answerMs": 2400,
    },
    "call.transferred": {
        "callId": "oac-0123456789ab",
        "fromOutbound": "oac-0123456789ab",
        "fromPhone": "+14155550100",
        "toUser": "reception",
        "transferType": "outbound-to-user",
        "trunkId": "trunk-1",
        "source": "outbound-ai",
    },
    "call.ended": {
        "callId": "vnum-0123456789ab",
        "number": "100",
        "room": "vnum-100-89ab",
        "outcome": "finished",
        "durationSec": 42,
        "tokens": 1200,
        "source": "vnum",
    },
    "outbound-ai.finished": {
        **_OUTBOUND,
        "outcome": "finished",
        "answered": True,
        "talkSec": 42,
        "trunk": "trunk-1",
        "inputTurns": 3,
        "outputTurns": 4,
        "errorDetail": "",
    },
    "transcript.saved": {
        **_OUTBOUND,
        "file": "oac-0123456789ab.json",
        "outcome": "finished",
        "source": "outbound-ai",
    },
    "share.created": {**_SHARE, "ttlHours": 0, "createdBy": "admin", "expiresUtc": None},
    "share.viewed": {**_SHARE, "viewerIp": "203.0.113.7"},
    "share.revoked": {**_SHARE, "revokedBy": "admin"},
    "room.cascade.promoted": {
        "room": "town-hall",
        "mode": "sfu",
        "reason": "auto-promote-join-human-count-7",
        "trigger": "auto-join",
        "humanCount": 7,
    },
    "room.cascade.demoted": {
        "room": "town-hall",
        "mode": "mesh",
        "reason": "admin-override",
        "trigger": "admin",
        "actor": "admin",
    },
    "room.cascade.failed": {
        "room": "town-hall",
        "mode": "sfu",
        "reason": "admin-override",
        "trigger": "admin",
        "actor": "admin",
        "error": "HTTP 0 bridge_unreachable: connection refused",
    },
    "room.peer.joined": {**_PEER, "joinPath": "direct", "peerCount": 3},
    "room.peer.left": {**_PEER, "reason": "ws-close", "peerCount": 2},
    "room.bandwidth.degraded": {
        "room": "town-hall",
        "stressedCount": 2,
        "peerCount": 4,
        "humanCount": 4,
        "windowSec": 30,
        "triggerPeerId": "p-1",
        "sampleMetrics": {"abrMbps": 0.8, "lossPct": 7.5, "rttMs": 320},
    },
    "sfu.offer.received": {
        "room": "town-hall",
        "peerId": "p-1",
        "role": "human",
        "offerLen": 2048,
        **_SFU,
    },
    "sfu.publisher.connected": {
        "room": "town-hall",
        "peerId": "p-1",
        "role": "human",
        "connectedUtc": "2026-01-01T12:00:00Z",
        "packetsAtConn": 12,
    },
    "sfu.subscribe.received": {
        "room": "town-hall",
        "publisherPeerId": "p-1",
        "subscriberPeerId": "p-2",
        "offerLen": 2048,
        **_SFU,
        "phase": "subscribe",
    },
    "sfu.subscriber.connected": {
        "room": "town-hall",
        "publisherPeerId": "p-1",
        "subscriberPeerId": "p-2",
        "connectedUtc": "2026-01-01T12:00:00Z",
        "packetsForwardedAtConn": 40,
    },
    "room.client.preference.changed": {
        "room": "town-hall",
        "peerId": "p-1",
        "role": "human",
        "prevPref": "auto",
        "newPref": "prefer-sfu",
        "voteTally": {"auto": 2, "prefer-mesh": 0, "prefer-sfu": 1},
        "effectiveThreshold": 5,
    },
    "webhook.test": {"subscriptionId": "3f0c9a1be2d44c71", "message": "test delivery"},
}


def sample(event: str, **fields: Any) -> dict[str, Any]:
    """``event``'s sample payload with ``fields`` replaced or added."""
    return {**copy.deepcopy(SAMPLES[event]), **fields}
