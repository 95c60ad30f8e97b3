"""Whatever reaches the bridge's SIP port from anyone: datagrams that are not SIP, requests that
lack or bend what RFC 3261 requires, methods the bridge does not take, offers it cannot send
media to, TCP connections that never speak. Each gets its RFC 3261 answer or none at all, and
the bridge stays whole (decision 0325). The module's platform is not started unless a test asks
for it, so an INVITE that got past these checks would be answered 503."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

import pytest
from aiosipua import SipResponse

from switchboard.mediabridge.sip.tcp import MAX_PER_SOURCE
from tests.mediabridge.conftest import (
    BRIDGE_ONLY,
    RECEPTIONIST_KEY,
    RECEPTIONIST_PROMPT,
    Bridge,
    Platform,
)
from tests.mediabridge.rawsip import Caller, sdp
from tests.mediabridge.test_inbound import inbound_call

pytestmark = [pytest.mark.slow, BRIDGE_ONLY]

DID = "+4930177"
ALLOW = "INVITE, ACK, BYE, CANCEL, OPTIONS, NOTIFY, INFO, UPDATE"


async def fence(caller: Caller) -> list[str]:
    """An OPTIONS after what a test sent, and the first lines of what came back before its 200:
    the bridge takes datagrams in order and answers a bad request at once, so an empty list
    shows that nothing answered the rest."""
    caller.cseq += 1
    probe = {"Call-ID": f"fence-{caller.cseq}", "To": f"<sip:{caller.did}@127.0.0.1>"}
    caller.send(caller.wire("OPTIONS", headers=probe))
    before: list[str] = []
    while True:
        reply = await caller.reply()
        cseq = reply.headers.get_first("cseq")
        if isinstance(reply, SipResponse) and cseq == f"{caller.cseq} OPTIONS":
            assert reply.status_code == 200
            return before
        before.append(bytes(reply).split(b"\r\n", 1)[0].decode())


def errors_in(bridge: Bridge) -> list[str]:
    return [line for line in bridge.process.output().splitlines() if "ERROR" in line
            or "Traceback" in line]  # fmt: skip


async def test_what_is_not_sip_gets_no_answer(bridge: Bridge, caller: Caller) -> None:
    for data in (
        os.urandom(200),
        b"hello world\r\n\r\n",
        b"\r\n\r\n",  # a keep-alive
        b"\xff\xfe INVITE \x80\x81 SIP/2.0\r\nVia: x\r\n\r\n",
        b"INVITE sip:+1@127.0.0.1\r\n\r\n",  # no version
        # responses to nothing the bridge sent, one of them with a CSeq that is no number
        b"SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 192.0.2.9;branch=z9hG4bKx\r\nCSeq: 1 INVITE\r\n\r\n",
        b"SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 192.0.2.9;branch=z9hG4bKx\r\nCSeq: x INVITE\r\n\r\n",
        b"SIP/2.0 abc OK\r\n\r\n",
    ):
        caller.send(data)
    assert await fence(caller) == []
    assert errors_in(bridge) == []


def _bad_utf8(caller: Caller) -> bytes:
    return caller.wire("INVITE", sdp()).replace(b"+14155550199@", b"\xff\xfe@", 1)


REFUSED = {
    "no Call-ID": ({"Call-ID": ""}, 400, "Missing Call-ID Header"),
    "no CSeq": ({"CSeq": ""}, 400, "Missing CSeq Header"),
    "no Via": ({"Via": ""}, 400, "Missing Via Header"),
    "no From": ({"From": ""}, 400, "Missing From Header"),
    "no To": ({"To": ""}, 400, "Missing To Header"),
    "no Contact": ({"Contact": ""}, 400, "Missing or Malformed Contact Header"),
    "CSeq not a number": ({"CSeq": "x INVITE"}, 400, "Malformed CSeq Header"),
    "CSeq of another method": ({"CSeq": "1 BYE"}, 400, "CSeq Method Does Not Match"),
    "Via not SIP/2.0": ({"Via": "garbage 127.0.0.1;branch=z9hG4bK1"}, 400,
                        "Malformed Via Header"),
    "From with a bad port": ({"From": "<sip:a@127.0.0.1:x>;tag=1"}, 400, "Malformed From Header"),
    "To without a URI": ({"To": "nobody"}, 400, "Malformed To Header"),
    "Contact without a host": ({"Contact": "<>"}, 400, "Missing or Malformed Contact Header"),
    "Content-Length past the body": ({"Content-Length": "9999"}, 400, "Bad Content-Length"),
    "Content-Length negative": ({"Content-Length": "-1"}, 400, "Bad Content-Length"),
    "Require": ({"Require": "100rel, timer"}, 420, "Bad Extension"),
    "a 20 KiB header": ({"X-Padding": "a" * 20_000}, 513, "Message Too Large"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(REFUSED))
async def test_a_request_that_lacks_or_bends_a_mandatory_header_is_refused(
    caller: Caller, case: str
) -> None:
    headers, status, reason = REFUSED[case]
    length = headers.pop("Content-Length", None)
    caller.send(caller.wire("INVITE", sdp(), headers=headers, length=length))
    answer = await caller.reply()  # at once: no 100 Trying goes first
    assert isinstance(answer, SipResponse)
    assert (answer.status_code, answer.reason_phrase) == (status, reason)
    if status == 420:
        assert answer.headers.get("unsupported") == ["100rel"]  # timer it takes (decision 0328)


@pytest.mark.parametrize(
    ("line", "status", "reason"),
    [
        ("INVITE sip:+4930177@127.0.0.1 SIP/3.0", 505, "Version Not Supported"),
        ("INVITE http://127.0.0.1/ SIP/2.0", 416, "Unsupported URI Scheme"),
        ("INVITE sip:+4930177@127.0.0.1:99999 SIP/2.0", 400, "Malformed Request-URI"),
    ],
)
async def test_a_request_line_the_bridge_cannot_take_is_refused(
    caller: Caller, line: str, status: int, reason: str
) -> None:
    caller.send(caller.wire("INVITE", sdp(), line=line))
    answer = await caller.final()
    assert (answer.status_code, answer.reason_phrase) == (status, reason)


async def test_a_quoted_display_name_may_hold_angle_brackets(caller: Caller) -> None:
    name = f'"Reception <main> \\"desk\\"" <sip:+14155550199@127.0.0.1:{caller.udp.port}>;tag=q'
    caller.send(caller.wire("INVITE", OFFERS["port 0"], headers={"From": name}))
    assert (await caller.final()).status_code == 488  # past the header checks, to the offer's


async def test_header_bytes_that_are_not_utf8_are_refused_400(caller: Caller) -> None:
    caller.send(_bad_utf8(caller))
    answer = await caller.final()
    assert (answer.status_code, answer.reason_phrase) == (400, "Header Not UTF-8")


async def test_a_request_whose_answer_would_reflect_kilobytes_gets_none(caller: Caller) -> None:
    """Answering would copy a 5 KiB From, several times over, to whatever the source claims."""
    caller.send(caller.wire("INVITE", sdp(), headers={"From": f"<sip:{'a' * 5000}@x>;tag=1"}))
    assert await fence(caller) == []


async def test_methods_the_bridge_does_not_take(bridge: Bridge, caller: Caller) -> None:
    caller.send(caller.wire("OPTIONS"))
    ok = await caller.final("OPTIONS")
    assert ok.status_code == 200
    assert ", ".join(ok.headers.get("allow")) == ALLOW
    assert ok.headers.get_first("accept") == "application/sdp"
    for method, status in (("REGISTER", 405), ("SUBSCRIBE", 405), ("MESSAGE", 405),
                           ("REFER", 405), ("FOO", 501)):  # fmt: skip
        caller.send(caller.wire(method))
        answer = await caller.final(method)
        assert (answer.status_code, ", ".join(answer.headers.get("allow"))) == (status, ALLOW)
    for method in ("BYE", "CANCEL", "INFO", "NOTIFY"):
        caller.send(caller.wire(method))
        assert (await caller.final(method)).status_code == 481, method
    caller.to_tag = "not-ours"  # a re-INVITE for a dialog the bridge does not hold
    caller.send(caller.wire("INVITE", sdp()))
    assert (await caller.final()).status_code == 481
    caller.send(caller.wire("ACK"))  # an ACK is never answered
    assert await fence(caller) == []


OFFERS = {
    "no audio m-line": "v=0\r\no=c 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n",
    "no G.711": sdp(formats="9 18"),
    "0.0.0.0": sdp(host="0.0.0.0"),
    "multicast": sdp(host="224.0.0.1"),
    "multicast with a TTL": sdp(host="239.1.1.1/127"),
    "broadcast": sdp(host="255.255.255.255"),
    "port 0": sdp(port=0),
    "port past 65535": sdp(port=99999),
    "a host name": sdp(host="media.example.net"),
    "IPv6": sdp().replace("IN IP4 127.0.0.1\r\nt", "IN IP6 ::1\r\nt"),
    "no c= line": sdp().replace("c=IN IP4 127.0.0.1\r\n", ""),
    "no SDP": "",
    "not text": "\xff\x00 binary",
}


@pytest.mark.parametrize("case", list(OFFERS))
async def test_an_offer_the_bridge_cannot_send_media_to_is_refused_488(
    bridge: Bridge, caller: Caller, case: str
) -> None:
    caller.send(caller.wire("INVITE", OFFERS[case]))
    answer = await caller.final()
    assert answer.status_code == 488
    caller.send(caller.wire("ACK"))
    assert await fence(caller) == []
    assert errors_in(bridge) == []


def options_over_tcp(cseq: int) -> bytes:
    return (
        "OPTIONS sip:bridge@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:9;branch=z9hG4bKt\r\n"
        "From: <sip:probe@127.0.0.1>;tag=p\r\nTo: <sip:bridge@127.0.0.1>\r\nCall-ID: tcp-probe\r\n"
        f"CSeq: {cseq} OPTIONS\r\nContent-Length: 0\r\n\r\n"
    ).encode()


async def closed(reader: asyncio.StreamReader) -> bool:
    return await asyncio.wait_for(reader.read(1000), 20) == b""


async def test_tcp_connections_are_bounded_and_a_silent_one_is_closed(bridge: Bridge) -> None:
    port = bridge.process.sip_port
    talking_reader, talking = await asyncio.open_connection("127.0.0.1", port)
    talking.write(options_over_tcp(1))
    assert b"SIP/2.0 200 OK" in await asyncio.wait_for(talking_reader.read(2000), 10)
    silent = [await asyncio.open_connection("127.0.0.1", port) for _ in range(MAX_PER_SOURCE)]
    try:
        # the source holds MAX_PER_SOURCE with the talking one: the last is closed at once,
        # before 64*T1 (3.2 s at the tests' T1) closes the others, which never spoke
        first_closed = asyncio.ensure_future(closed(silent[0][0]))
        assert await closed(silent[-1][0])
        assert not first_closed.done()
        assert await first_closed
        for reader, _ in silent[1:-1]:
            assert await closed(reader)
        talking.write(options_over_tcp(2))  # the one that spoke stays open
        assert b"SIP/2.0 200 OK" in await asyncio.wait_for(talking_reader.read(2000), 10)
    finally:
        talking.close()
        for _, writer in silent:
            writer.close()


def open_fds(bridge: Bridge, platform_port: int) -> int:
    """The bridge process's file descriptors, less its keep-alive connections to the platform
    (the pool of its HTTP client, which httpx bounds and keeps open between questions)."""
    assert bridge.process.process is not None
    to_platform = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[2].rsplit(":", 1)[1], 16) == platform_port:
            to_platform.add(f"socket:[{fields[9]}]")
    folder = Path(f"/proc/{bridge.process.process.pid}/fd")
    count = 0
    for fd in folder.iterdir():
        with contextlib.suppress(FileNotFoundError):  # closed while counted
            count += os.readlink(fd) not in to_platform
    return count


async def test_after_hostile_input_a_normal_call_is_answered_and_nothing_leaks(
    bridge: Bridge, platform: Platform, platform_port: int, caller: Caller, tmp_path: Path
) -> None:
    await platform.receptionist(DID)
    await fence(caller)
    before = open_fds(bridge, platform_port)
    for data in (
        os.urandom(1400), _bad_utf8(caller), caller.wire("INVITE", OFFERS["port past 65535"]),
        caller.wire("INVITE", sdp(), headers={"Call-ID": ""}),
        caller.wire("INVITE", sdp(), headers={"X-Padding": "a" * 60_000}),
        b"SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 192.0.2.9;branch=z9hG4bKx\r\nCSeq: x BYE\r\n\r\n",
    ):  # fmt: skip
        caller.send(data)
    for number in range(20):  # INVITEs that are never ACKed: the bridge gives up on each
        caller.call_id = f"flood-{number}"
        caller.send(caller.wire("INVITE", sdp()))
    await fence(caller)
    assert await inbound_call(bridge, tmp_path, "uac_inbound.xml", DID) == 0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30  # the unanswered 2xx are resent for 64*T1, then a BYE each
    while (after := open_fds(bridge, platform_port)) > before:
        assert loop.time() < deadline, (after, before)
        await asyncio.sleep(0.1)
    output = bridge.process.output()
    assert errors_in(bridge) == []
    assert RECEPTIONIST_KEY not in output
    assert RECEPTIONIST_PROMPT not in output
