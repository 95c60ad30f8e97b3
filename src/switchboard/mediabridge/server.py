"""The bridge process: the SIP endpoint, the calls, inbound answering and the HTTP side."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
from pathlib import Path

import uvicorn
from aiortp import PortAllocator

from switchboard.mediabridge.calls import Calls, Media
from switchboard.mediabridge.config import Limits, Trunk
from switchboard.mediabridge.engines.base import Engine
from switchboard.mediabridge.http import create_app
from switchboard.mediabridge.inbound import Inbound
from switchboard.mediabridge.platform import PlatformClient, event_id
from switchboard.mediabridge.rooms.aipeer import AiPeers
from switchboard.mediabridge.rooms.config import SfuConfig
from switchboard.mediabridge.rooms.endpoints import room_routes
from switchboard.mediabridge.rooms.janus import JanusClient
from switchboard.mediabridge.rooms.process import JanusProcess, LocalJanus, free_port
from switchboard.mediabridge.rooms.sfu import SfuRooms
from switchboard.mediabridge.sip.endpoint import SipEndpoint
from switchboard.mediabridge.sip.ping import TrunkPings
from switchboard.mediabridge.sip.register import Registrations
from switchboard.mediabridge.sip.sources import Sources

log = logging.getLogger("switchboard.mediabridge")


class Server:
    def __init__(
        self,
        *,
        http: tuple[str, int],
        sip: tuple[str, int],
        advertise: str,
        trunks: dict[str, Trunk],
        engine: Engine,
        secret: str,
        rtp_ports: tuple[int, int],
        platform_url: str,
        t1: float,
        instance: str,
        sfu: SfuConfig | None = None,
        limits: Limits | None = None,
        sources: Sources | None = None,
    ) -> None:
        self.endpoint = SipEndpoint(sip[0], sip[1], advertise=advertise, t1=t1, sources=sources)
        self.pings = TrunkPings(self.endpoint, trunks)
        self.platform = PlatformClient(secret=secret, platform_url=platform_url)
        media = Media(host=advertise, bind_host=sip[0], ports=PortAllocator(rtp_ports))
        self.calls = Calls(
            endpoint=self.endpoint, trunks=trunks, engine=engine, platform=self.platform,
            media=media, instance=instance, limits=limits, down=self.pings.down,
        )  # fmt: skip
        self.inbound = Inbound(self.calls)
        self.endpoint.on_invite = self.inbound.answer
        self.janus_process, self.sfu = self._sfu(sfu or SfuConfig())
        self.ai_peers = AiPeers(engine, self.platform)
        self.registrations = Registrations(self.endpoint, trunks)
        app = create_app(
            self.calls, secret, room_routes(self.sfu, secret, self.ai_peers),
            registrations=self.registrations.status, pings=self.pings.status,
        )  # fmt: skip
        config = uvicorn.Config(
            app, host=http[0], port=http[1], log_config=None,
            access_log=False, lifespan="off",
        )  # fmt: skip
        self.http = uvicorn.Server(config)
        self.http_address = http
        self._http_task: asyncio.Task[None] | None = None

    def _sfu(self, config: SfuConfig) -> tuple[JanusProcess | None, SfuRooms | None]:
        """The SFU of the rooms: none, a local Janus this process supervises, or Janus's URL."""
        if config.janus == "off":
            return None, None
        process = None
        if config.local:
            local = LocalJanus(
                workdir=Path(tempfile.mkdtemp(prefix="switchboard-janus-")),
                http_port=free_port(), admin_port=free_port(), rtp_ports=config.rtp_ports,
                nat_1_1=config.nat_1_1, stun_server=config.stun_server,
                ice_enforce_list=config.ice_enforce_list, ice_lite=config.lite,
            )  # fmt: skip
            process = JanusProcess(local)
            client = JanusClient(
                local.url, admin_url=local.admin_url, admin_secret=local.admin_secret
            )
        else:
            client = JanusClient(
                config.janus, admin_url=config.admin_url, admin_secret=config.admin_secret
            )
        return process, SfuRooms(client, report=self.platform.post_room_event, new_id=event_id)

    async def start(self) -> None:
        if self.janus_process is not None:
            await self.janus_process.start()
        await self.endpoint.start()
        self.registrations.start()
        self.pings.start()
        self._http_task = asyncio.ensure_future(self.http.serve())
        while not self.http.started:
            if self._http_task.done():
                self._http_task.result()
                raise RuntimeError("the HTTP side did not start")
            await asyncio.sleep(0.01)
        # one line for operators and for whoever waits on the process
        print(
            f"bridge ready http={self.http_address[0]}:{self.http_address[1]} "
            f"sip={self.endpoint.advertise}:{self.endpoint.port} instance={self.calls.instance}",
            flush=True,
        )

    async def stop(self) -> None:
        self.http.should_exit = True
        if self._http_task is not None:
            with contextlib.suppress(Exception):
                await self._http_task
        await self.calls.aclose()
        await self.inbound.aclose()
        await self.ai_peers.aclose()
        await self.pings.aclose()
        await self.registrations.aclose()  # the bindings removed while SIP still runs
        await self.endpoint.stop()
        if self.sfu is not None:
            await self.sfu.aclose()
        if self.janus_process is not None:
            await self.janus_process.stop()
            shutil.rmtree(self.janus_process.config.workdir, ignore_errors=True)
        await self.platform.aclose()
