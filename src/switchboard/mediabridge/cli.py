"""``switchboard bridge serve``: the media bridge as its own process."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import secrets
import signal
import socket
import tomllib
from pathlib import Path

import click

from switchboard.mediabridge.config import (
    DEFAULT_MAX_INBOUND_CALLS,
    DEFAULT_RTP_TIMEOUT_SEC,
    Limits,
    TrunksError,
    load_trunks,
)
from switchboard.mediabridge.engines import ENGINES, create_engine
from switchboard.mediabridge.media import parse_range
from switchboard.mediabridge.rooms.config import SfuConfig, SfuConfigError, sfu_config
from switchboard.mediabridge.sip.sources import SourcesError, allowed

DEFAULT_RTP_PORTS = "10000-20000"
log = logging.getLogger("switchboard.mediabridge")


def _address(text: str, option: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise click.BadParameter(f"expected HOST:PORT, got {text!r}", param_hint=option)
    return host.strip("[]") or "0.0.0.0", int(port)  # noqa: S104 (an operator's choice)


def _primary_address() -> str:
    """The address of the interface that holds the default route (a UDP ``connect`` picks it
    without sending anything); behind NAT, ``--advertise`` names the public one instead."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
            return str(probe.getsockname()[0])
        except OSError:
            return "127.0.0.1"


@click.command("serve")
@click.option(
    "--listen",
    default="127.0.0.1:8091",
    show_default=True,
    help="HOST:PORT of the protocol's HTTP side (the platform's SWITCHBOARD_BRIDGE_URL)",
)
@click.option(
    "--sip",
    "sip_addr",
    default="0.0.0.0:5060",
    show_default=True,
    help="HOST:PORT of SIP (UDP and TCP): where trunks' answers and inbound INVITEs arrive",
)
@click.option(
    "--trunks",
    "trunks_file",
    required=True,
    type=click.Path(path_type=Path),
    help="The trunks file (TOML)",
)
@click.option(
    "--rtp-ports",
    default=DEFAULT_RTP_PORTS,
    show_default=True,
    help="LO-HI: the UDP ports of the media (one even/odd pair per call leg)",
)
@click.option("--engine", type=click.Choice(ENGINES), default="offline", show_default=True)
@click.option(
    "--advertise",
    default="",
    help="The address written in SIP headers and SDP (default: the --sip host; "
    "set it to the public address behind NAT)",
)
@click.option(
    "--platform-url",
    envvar="SWITCHBOARD_PUBLIC_BASE_URL",
    default="",
    help="The platform's address, asked about inbound calls [env SWITCHBOARD_PUBLIC_BASE_URL]",
)
@click.option(
    "--sip-t1-ms",
    default=500,
    show_default=True,
    type=click.IntRange(10, 5000),
    help="RFC 3261 T1: INVITEs are resent from T1 and abandoned after 64*T1 (timer B)",
)
@click.option(
    "--max-inbound-calls",
    default=DEFAULT_MAX_INBOUND_CALLS,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="Inbound INVITEs taken at once; more are refused 503 with Retry-After",
)
@click.option(
    "--rtp-timeout-sec",
    default=DEFAULT_RTP_TIMEOUT_SEC,
    show_default=True,
    type=click.FloatRange(0, 86_400),
    help="Hang up an answered call whose far end sends no RTP nor RTCP for this long (0: never)",
)
@click.option(
    "--sip-allow",
    envvar="SWITCHBOARD_BRIDGE_SIP_ALLOW",
    default="",
    help="Comma-separated addresses and CIDR networks that may send SIP requests, besides the "
    "trunks; others are dropped unanswered (default: anyone) [env SWITCHBOARD_BRIDGE_SIP_ALLOW]",
)
@click.option(
    "--sfu",
    "sfu_janus",
    default="",
    help='The rooms\' SFU: "off", "local" (start and supervise Janus) or the URL of Janus\'s '
    "HTTP API (default: the [sfu] table of the trunks file, else off)",
)
@click.option("--sfu-rtp-ports", default="", help="LO-HI: the RTP ports of a local Janus")
@click.option("--sfu-nat-1-1", default="", help="The public address of a local Janus (1:1 NAT)")
@click.option("--log-level", default="INFO", show_default=True)
def serve(
    listen: str, sip_addr: str, trunks_file: Path, rtp_ports: str, engine: str, advertise: str,
    platform_url: str, sip_t1_ms: int, max_inbound_calls: int, rtp_timeout_sec: float,
    sip_allow: str, sfu_janus: str, sfu_rtp_ports: str, sfu_nat_1_1: str, log_level: str,
) -> None:  # fmt: skip
    """Run the media bridge: protocol v1 over HTTP, SIP and RTP to the trunks.

    The shared secret comes from SWITCHBOARD_BRIDGE_SECRET."""
    secret = os.environ.get("SWITCHBOARD_BRIDGE_SECRET", "")
    if not secret:
        raise click.UsageError("set SWITCHBOARD_BRIDGE_SECRET, shared with the platform")
    http_host, http_port = _address(listen, "--listen")
    sip_host, sip_port = _address(sip_addr, "--sip")
    try:
        ports = parse_range(rtp_ports)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--rtp-ports") from None
    try:
        trunks = load_trunks(trunks_file, os.environ)
    except TrunksError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        sources = allowed(sip_allow, trunks.values())
    except SourcesError as exc:
        raise click.BadParameter(str(exc), param_hint="--sip-allow") from None
    sfu = _sfu_options(trunks_file, sfu_janus, sfu_rtp_ports, sfu_nat_1_1)
    chosen = create_engine(engine)
    if not advertise:
        advertise = sip_host if sip_host not in ("0.0.0.0", "::") else _primary_address()  # noqa: S104
    from switchboard.mediabridge.server import Server

    # The log is set up once every option has been accepted: a refused start changes nothing.
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    if not platform_url:
        log.warning(
            "no --platform-url (nor SWITCHBOARD_PUBLIC_BASE_URL): inbound calls are refused "
            "with 500 and the SFU's connections are not reported"
        )
    if sources is not None:
        log.info("SIP requests are taken only from %s", sources)
    server = Server(
        http=(http_host, http_port), sip=(sip_host, sip_port), advertise=advertise,
        trunks=trunks, engine=chosen, secret=secret, rtp_ports=ports,
        platform_url=platform_url, t1=sip_t1_ms / 1000,
        instance="bridge-" + secrets.token_hex(4), sfu=sfu,
        limits=Limits(max_inbound_calls=max_inbound_calls, rtp_timeout_sec=rtp_timeout_sec),
        sources=sources,
    )  # fmt: skip
    asyncio.run(_serve(server))


def _sfu_options(trunks_file: Path, janus: str, rtp_ports: str, nat_1_1: str) -> SfuConfig:
    """The file's ``[sfu]`` table, with the command line's options over it."""
    table = dict(tomllib.loads(trunks_file.read_text(encoding="utf-8")).get("sfu") or {})
    for key, value in (("janus", janus), ("rtp_ports", rtp_ports), ("nat_1_1", nat_1_1)):
        if value:
            table[key] = value
    try:
        return sfu_config(table or None, os.environ, where=f"{trunks_file}: sfu")
    except SfuConfigError as exc:
        raise click.ClickException(str(exc)) from None


async def _serve(server: object) -> None:
    from switchboard.mediabridge.server import Server

    assert isinstance(server, Server)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    # What startup built lives as long as the process: set it aside from full collections
    # (the platform's decision 0990; the bridge imports nothing of the platform's kit).
    gc.collect()
    gc.freeze()
    try:
        await stop.wait()
    finally:
        await server.stop()


@click.group("bridge")
def bridge_cli() -> None:
    """The media bridge: SIP and RTP to the trunks, protocol v1 to the platform."""


bridge_cli.add_command(serve)
