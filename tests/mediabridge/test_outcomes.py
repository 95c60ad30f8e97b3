"""Every row of the outcome table, through the platform, the bridge process and sipp trunks.

The platform (on a real port) dials the bridge (a real process) through the outbound route
table; the bridge places SIP calls to sipp instances on loopback, one per trunk, all at once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from switchboard.bridge import protocol
from tests.calls.helpers import events
from tests.mediabridge.components import SECRET, SilentTrunk, Sipp
from tests.mediabridge.conftest import TRUNK_PASSWORD, Bridge, Platform
from tests.webhooks.conftest import Receiver, deliver_until, subscribe

pytestmark = pytest.mark.slow

SIPP_LIFETIME = 90  # seconds: a bound on a stuck sipp, not a timing


async def bridge_status(bridge: Bridge, call_id: str, attempt: int = 1) -> dict[str, Any]:
    body = orjson.dumps({"protocol": 1, "callId": call_id, "attempt": attempt})
    async with httpx.AsyncClient(base_url=bridge.process.url, timeout=30) as http:
        response = await http.post(
            f"/v1/calls/{call_id}/status", content=body,
            headers={protocol.SIGNATURE_HEADER: protocol.sign(SECRET, body)},
        )  # fmt: skip
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


async def hang_up_once_answered(platform: Platform, call_id: str) -> None:
    for _ in range(300):
        if (await platform.record(call_id))["answeredAtUtc"]:
            break
        await asyncio.sleep(0.05)
    response = await platform.http.post(
        f"/api.ashx/v1/calls/{call_id}/hangup", headers=platform.headers
    )
    assert response.status_code == 200, response.text


async def test_every_row_of_the_outcome_table(
    bridge: Bridge, platform: Platform, silent_trunk: SilentTrunk, receiver: Receiver,
    tmp_path: Path,
) -> None:  # fmt: skip
    ports = bridge.ports
    await subscribe(
        platform.runtime, platform.fixture, receiver.url("/hooks"),
        ["call.answered", "call.started", "outbound-ai.finished"],
    )  # fmt: skip
    loop = asyncio.get_running_loop()
    spare = SilentTrunk()
    spare_transport, _ = await loop.create_datagram_endpoint(
        lambda: spare, local_addr=("127.0.0.1", ports["spare"])
    )

    def uas(scenario: str, trunk: str, **options: Any) -> Any:
        # Each sipp lives through the whole table: on a loaded machine, the routes and the
        # eleven POSTs before the last call have taken over 20 s.
        return Sipp(scenario, ports[trunk]).start(tmp_path, timeout_sec=SIPP_LIFETIME, **options)

    sipps = {
        "echo": uas("uas_echo.xml", "echo", keys={"codec": "0"}, echo=True),
        "pcma": uas("uas_echo.xml", "pcma", keys={"codec": "8"}, echo=True),
        "bye": uas("uas_answer_bye.xml", "bye", echo=True),
        "ring": uas("uas_ring_cancel.xml", "ring"),
        "busy": uas("uas_486.xml", "busy"),
        "decline": uas("uas_603.xml", "decline"),
        "missing": uas("uas_404.xml", "missing"),
        "down": uas("uas_503.xml", "down"),
        "auth": uas("uas_auth.xml", "auth",
                    keys={"username": "acct", "password": TRUNK_PASSWORD}, echo=True),
        "tcp": uas("uas_echo.xml", "tcp", keys={"codec": "0"}, echo=True, extra=["-t", "t1"]),
        "hangup": uas("uas_talk.xml", "hangup", extra=["-mi", "127.0.0.1"]),
        "hold": uas("uas_talk.xml", "hold", echo=False, extra=["-mi", "127.0.0.1"]),
        "routed": uas("uas_record_route.xml", "routed", keys={"codec": "0"}, echo=True),
    }  # fmt: skip
    started = dict(zip(sipps, await asyncio.gather(*sipps.values()), strict=True))
    rows: dict[str, tuple[str, list[str], dict[str, Any]]] = {
        "finished": ("+14155550101", ["echo"], {}),
        "alaw": ("+14155550102", ["pcma"], {}),
        "far-hangup": ("+14155550103", ["bye"], {}),
        "ring-timeout": ("+14155550104", ["ring"], {"retries": 1}),
        "busy": ("+14155550105", ["busy"], {}),
        "decline": ("+14155550106", ["decline"], {}),
        "missing": ("+14155550107", ["missing", "spare"], {"retries": 1}),
        "failover": ("+14155550108", ["nope", "down", "silent", "auth"], {}),
        "max-duration": ("+14155550109", ["hold"], {"maxSeconds": 10}),
        "tcp": ("+14155550110", ["tcp"], {}),
        "hangup": ("+14155550111", ["hangup"], {}),
        "record-route": ("+14155550112", ["routed"], {}),
    }
    try:
        for phone, trunk_ids, _ in rows.values():
            await platform.route(phone, trunk_ids)
        ids = {
            name: await platform.place(phone, **extra) for name, (phone, _, extra) in rows.items()
        }
        await hang_up_once_answered(platform, ids["hangup"])
        records = dict(zip(ids, await asyncio.gather(
            *(platform.ended(call_id, within=45) for call_id in ids.values())
        ), strict=True))  # fmt: skip
        codes = {name: await sipp.exit_code() for name, sipp in started.items()}
    finally:
        for sipp in started.values():
            await sipp.stop()
        spare_transport.close()
    assert codes == dict.fromkeys(started, 0), codes
    for _ in range(100):  # the hangup is recorded at once; the bridge's report follows
        records["hangup"] = await platform.record(ids["hangup"])
        if records["hangup"]["sipStatus"]:
            break
        await asyncio.sleep(0.05)

    def row(name: str) -> tuple[str, str, int, str]:
        r = records[name]
        return r["status"], r["endedReason"], r["sipStatus"], r["errorDetail"]

    assert row("finished") == ("ended-success", "finished", 200, "")
    assert row("alaw") == ("ended-success", "finished", 200, "")
    assert row("far-hangup") == ("ended-failed-final", "far-hangup", 200, "")
    assert row("ring-timeout") == ("ended-failed-retry-pending", "no-answer", 487, "")
    assert row("busy") == ("ended-failed-final", "no-answer", 486, "")
    assert row("decline") == ("ended-failed-final", "not-now", 603, "")
    status, reason, sip_status, detail = row("missing")
    assert (status, reason, sip_status) == ("ended-failed-final", "", 404)  # not retried
    assert "does not exist" in detail
    assert "trunk missing" in detail
    assert spare.received == []  # no failover after "the number does not exist"
    assert row("failover") == ("ended-success", "finished", 200, "")
    assert silent_trunk.invites >= 3  # timer A resent the INVITE until timer B gave up
    assert row("max-duration") == ("ended-success", "max-duration", 200, "")
    assert row("tcp") == ("ended-success", "finished", 200, "")
    # the ACK and the BYE went through the proxies (sipp checked their Route headers)
    assert row("record-route") == ("ended-success", "finished", 200, "")
    # the platform hung up an answered call: BYE (sipp's scenario ends with it), outcome cancelled
    assert row("hangup") == ("cancelled", "cancelled", 200, "")

    answered_by = {name: records[name]["trunkId"] for name in ("finished", "alaw", "far-hangup")}
    assert answered_by == {"finished": "echo", "alaw": "pcma", "far-hangup": "bye"}
    assert records["failover"]["trunkId"] == "auth"

    # answered before started, with the trunk and the time from the INVITE
    for name in ("finished", "failover", "max-duration"):
        names = [n for n, _ in await events(platform.runtime, ids[name])]
        assert names.index("call.answered") < names.index("call.started"), names
        answered = dict(await events(platform.runtime, ids[name]))["call.answered"]
        assert answered["trunkId"] == rows[name][1][-1]
        assert answered["answerMs"] > 0

    # the same, as a real HTTP receiver got the webhooks
    picked_up = {
        "finished", "alaw", "far-hangup", "failover", "max-duration", "tcp", "hangup",
        "record-route",
    }  # fmt: skip
    expected = 3 * len(picked_up) + len(set(ids) - picked_up)  # unanswered: "finished" only
    bodies = await deliver_until(
        platform.runtime, receiver, lambda bodies: len(bodies) >= expected, path="/hooks"
    )
    assert len(bodies) == expected
    delivered = [(b["event"], b["data"]["callId"], b["data"].get("outcome", "")) for b in bodies]
    finished = [(event, outcome) for event, cid, outcome in delivered if cid == ids["finished"]]
    # deliveries run concurrently: their order is not the events' order (asserted above)
    assert sorted(finished) == [
        ("call.answered", ""), ("call.started", ""), ("outbound-ai.finished", "finished")
    ]  # fmt: skip

    # RTP flowed both ways (the echo trunks return what they hear), DTMF was received
    for name in ("finished", "alaw", "max-duration", "tcp"):
        log = await bridge_status(bridge, ids[name])
        # the attempt's own log, what a platform that lost callbacks recovers from
        assert [e["type"] for e in log["events"]] == ["answered", "ai-started", "ended"]
        assert log["events"][-1]["ended"] == log["ended"]
        ended = log["ended"]
        assert ended["rtpPacketsSent"] > 50, ended
        assert ended["rtpPacketsReceived"] > 50, ended
    assert "DTMF digit 1 received" in bridge.process.output()
