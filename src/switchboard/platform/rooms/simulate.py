"""``switchboard sim room``: a crowd of real signaling peers in a room of a running server.

N aiortc peers with synthetic media (``simpeer.RoomPeer``) join over the public WebSocket, as
browsers would, meet in mesh and follow the room's mode to the SFU and back; K of them report
stressed WebRTC statistics, the others healthy ones, once a second, so an operator (or a test)
can watch presence, the cascade and the bandwidth detector fire. After ``--hold`` seconds, or on
Ctrl-C, every peer leaves. Progress goes to standard error; the summary to standard output, as
text or (``--json``) one JSON object.

Heavy imports (aiortc, websockets) happen when the command runs, not when the CLI starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

import click

from switchboard.kit.cli import json_flag, print_json

if TYPE_CHECKING:
    from switchboard.platform.rooms.simpeer import RoomPeer

# What the peers report each second (docs/rooms.md, `stats`): a stressed peer is below every
# threshold of spec 8.1 at once (outgoing bitrate, loss after 50 packets, RTT); a healthy one
# is clear of all of them.
STRESSED = {"abrMbps": 0.5, "lossPct": 8.0, "packetsSent": 500, "rttMs": 450.0}
HEALTHY = {"abrMbps": 4.0, "lossPct": 0.0, "packetsSent": 500, "rttMs": 40.0}
STATS_EVERY = 1.0


@dataclass
class Crowd:
    """The peers of one run and what they saw."""

    peers: list[RoomPeer] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)  # every mode the room went through

    def summary(self, room: str, started: float) -> dict[str, Any]:
        return {
            "room": room,
            "peers": len(self.peers),
            "joined": sum(1 for p in self.peers if p.peer_id),
            "mode": self.modes[-1] if self.modes else "",
            "modes": self.modes,
            "framesReceived": sum(sum(p.frames.values()) for p in self.peers),
            "errors": [e for p in self.peers for e in p.errors],
            "seconds": round(time.monotonic() - started, 1),
        }


def _say(text: str) -> None:
    click.echo(text, err=True)


async def _connect(base_url: str, host: str, room: str, token: str) -> Any:
    from websockets.asyncio.client import connect

    parts = urlsplit(base_url)
    secure = parts.scheme == "https"
    query = {"room": room, **({"access_token": token} if token else {})}
    uri = f"{'wss' if secure else 'ws'}://{host}/signal.ashx?{urlencode(query)}"
    return await connect(
        uri,
        host=parts.hostname,
        port=parts.port or (443 if secure else 80),
        ssl=ssl.create_default_context() if secure else None,
        server_hostname=host.split(":")[0] if secure else None,
        open_timeout=10,
        max_size=None,
    )


async def _report_stats(peers: list[RoomPeer], stressed: int, stop: asyncio.Event) -> None:
    while not stop.is_set():
        for index, peer in enumerate(peers):
            if peer.peer_id:
                with contextlib.suppress(Exception):  # a closed socket stops reporting
                    await peer.send(type="stats", **(STRESSED if index < stressed else HEALTHY))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), STATS_EVERY)


async def _watch(crowd: Crowd, count: int, stop: asyncio.Event) -> None:
    joined = 0
    while not stop.is_set():
        now = sum(1 for p in crowd.peers if p.peer_id)
        if now != joined:
            joined = now
            _say(f"joined {joined}/{count}")
        # the first peer's account of the room's modes: every change it was told of, however
        # late this look comes (a look now and then would miss a mode that did not last)
        told = crowd.peers[0].modes if crowd.peers else []
        for mode in told[len(crowd.modes) :]:
            crowd.modes.append(mode)
            _say(f"mode {mode}")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.2)


async def run_crowd(
    *, base_url: str, host: str, room: str, count: int, stressed: int, hold: float, token: str
) -> dict[str, Any]:
    """Join ``count`` peers, hold the room for ``hold`` seconds, leave; the summary."""
    from switchboard.platform.rooms.simpeer import RoomPeer

    crowd, stop, started = Crowd(), asyncio.Event(), time.monotonic()
    watcher = asyncio.create_task(_watch(crowd, count, stop))
    reporter = asyncio.create_task(_report_stats(crowd.peers, stressed, stop))
    try:
        for index in range(count):
            ws = await _connect(base_url, host, room, token)
            peer = RoomPeer(ws, f"sim-{index + 1}")
            crowd.peers.append(peer)
            await peer.join()
        if stressed:
            _say(f"{min(stressed, count)} of {count} peers report stressed statistics")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), hold)
    finally:
        await asyncio.sleep(0.3)  # the watcher's last look before the peers leave
        stop.set()
        await asyncio.gather(watcher, reporter, return_exceptions=True)
        summary = crowd.summary(room, started)
        for peer in crowd.peers:
            with contextlib.suppress(Exception):
                await peer.send(type="leave")
            with contextlib.suppress(Exception):
                await peer.close()
        _say(f"left: {len(crowd.peers)} peers")
    return summary


@click.command("room")
@click.option("--tenant", required=True, help="The tenant; its first domain is the Host")
@click.option("--room", required=True, help="The room's name")
@click.option("--peers", "count", type=click.IntRange(1, 50), default=2, show_default=True)
@click.option("--stressed", type=click.IntRange(0, 50), default=0, show_default=True,
              help="How many of the peers report stressed statistics")  # fmt: skip
@click.option("--hold", type=click.FloatRange(0), default=30.0, show_default=True,
              help="Seconds the peers stay before they leave")  # fmt: skip
@click.option("--url", default=None, help="The server (default: the public base URL)")
@click.option("--token", envvar="SWITCHBOARD_TOKEN", default="",
              help="A bearer of the tenant: the peers join verified")  # fmt: skip
@json_flag
def sim_room(
    tenant: str, room: str, count: int, stressed: int, hold: float, url: str | None, token: str,
    as_json: bool,
) -> None:  # fmt: skip
    """Connect N signaling peers with synthetic media to a room of a running server."""
    from websockets.exceptions import InvalidHandshake

    from switchboard.platform.rooms.cli import tenant_endpoint

    host, base, _secret = tenant_endpoint(tenant)
    try:
        summary = asyncio.run(
            run_crowd(
                base_url=url or base,
                host=host,
                room=room,
                count=count,
                stressed=stressed,
                hold=hold,
                token=token,
            )
        )
    except (OSError, InvalidHandshake) as exc:
        click.echo(f"error: the server is unreachable ({type(exc).__name__}: {exc})", err=True)
        sys.exit(2)
    if as_json:
        print_json(summary)
    else:
        click.echo(f"{summary['room']}\t{summary['joined']}/{summary['peers']} joined\t"
                   f"modes {' -> '.join(summary['modes']) or '-'}\t"
                   f"{summary['framesReceived']} frames")  # fmt: skip
