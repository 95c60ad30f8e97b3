"""A local Janus process with a generated minimal configuration (docs/bridge.md, "The SFU").

Only the VideoRoom plugin and the HTTP transport are loaded (their libraries are linked into
folders of the configuration directory, so nothing else Debian installs is loaded); the API and
the admin API listen on loopback only, on their own ports; RTP uses its own port range; the NAT
settings (1:1 mapping, STUN server, interfaces) are passed through. The process is restarted
when it dies, with a delay doubling from 1 s to 30 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import socket
from dataclasses import dataclass, field
from pathlib import Path

from switchboard.mediabridge.rooms.janus import JanusClient, JanusUnreachable

log = logging.getLogger("switchboard.mediabridge.rooms.process")

JANUS = "/usr/bin/janus"
LIBRARIES = Path("/usr/lib/x86_64-linux-gnu/janus")
READY_TIMEOUT_SEC = 15.0
RESTART_DELAYS = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class LocalJanus:
    """What the generated configuration says; ports 0 are chosen free at start."""

    workdir: Path
    executable: str = JANUS
    libraries: Path = LIBRARIES
    http_port: int = 0
    admin_port: int = 0
    rtp_ports: tuple[int, int] = (20000, 20999)
    nat_1_1: str = ""
    stun_server: str = ""
    ice_enforce_list: str = ""
    ice_ignore_list: str = "vmnet"
    ice_lite: bool = False
    debug_level: int = 3
    admin_secret: str = field(default_factory=lambda: secrets.token_hex(16), repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/janus"

    @property
    def admin_url(self) -> str:
        return f"http://127.0.0.1:{self.admin_port}/admin"

    def write(self) -> Path:
        """Write the configuration folder; the path of ``janus.jcfg``."""
        if not self.http_port:
            self.http_port = free_port()
        if not self.admin_port:
            self.admin_port = free_port()
        conf = self.workdir / "conf"
        for name in ("conf", "plugins", "transports", "events", "loggers"):
            (self.workdir / name).mkdir(parents=True, exist_ok=True)
        for kind, library in (("plugins", "libjanus_videoroom.so"),
                              ("transports", "libjanus_http.so")):  # fmt: skip
            link = self.workdir / kind / library
            if not link.is_symlink():
                link.symlink_to(self.libraries / kind / library)
        nat = [f'ice_ignore_list = "{self.ice_ignore_list}"',
               f"ice_lite = {'true' if self.ice_lite else 'false'}"]  # fmt: skip
        if self.nat_1_1:
            nat.append(f'nat_1_1_mapping = "{self.nat_1_1}"')
        if self.stun_server:
            host, _, port = self.stun_server.rpartition(":")
            nat += [f'stun_server = "{host or port}"', f"stun_port = {port if host else 3478}"]
        if self.ice_enforce_list:
            nat.append(f'ice_enforce_list = "{self.ice_enforce_list}"')
        main = f"""general: {{
	configs_folder = "{conf}"
	plugins_folder = "{self.workdir / "plugins"}"
	transports_folder = "{self.workdir / "transports"}"
	events_folder = "{self.workdir / "events"}"
	loggers_folder = "{self.workdir / "loggers"}"
	debug_level = {self.debug_level}
	admin_secret = "{self.admin_secret}"
	session_timeout = 60
	server_name = "switchboard-sfu"
}}
media: {{
	rtp_port_range = "{self.rtp_ports[0]}-{self.rtp_ports[1]}"
}}
nat: {{
	{chr(10).join(nat)}
}}
"""
        http = f"""general: {{
	json = "plain"
	base_path = "/janus"
	http = true
	port = {self.http_port}
	ip = "127.0.0.1"
	https = false
}}
admin: {{
	admin_base_path = "/admin"
	admin_http = true
	admin_port = {self.admin_port}
	admin_ip = "127.0.0.1"
	admin_https = false
}}
"""
        (conf / "janus.jcfg").write_text(main)
        (conf / "janus.transport.http.jcfg").write_text(http)
        (conf / "janus.plugin.videoroom.jcfg").write_text("general: {\n}\n")
        return conf / "janus.jcfg"


class JanusProcess:
    """Start, watch and restart one local Janus."""

    def __init__(self, config: LocalJanus) -> None:
        self.config = config
        self.process: asyncio.subprocess.Process | None = None
        self._watch: asyncio.Task[None] | None = None
        self._stopping = False
        self.restarts = 0

    async def start(self) -> None:
        await self._spawn()
        self._watch = asyncio.ensure_future(self._supervise())

    async def _spawn(self) -> None:
        path = self.config.write()
        log_file = (self.config.workdir / "janus.log").open("ab")
        try:
            self.process = await asyncio.create_subprocess_exec(
                self.config.executable, "--config", str(path),
                "--configs-folder", str(path.parent), "--disable-colors",
                stdin=asyncio.subprocess.DEVNULL, stdout=log_file, stderr=log_file,
            )  # fmt: skip
        finally:
            log_file.close()
        await self._ready()

    async def _ready(self) -> None:
        client = JanusClient(self.config.url)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + READY_TIMEOUT_SEC
        try:
            while True:
                if self.process is not None and self.process.returncode is not None:
                    raise RuntimeError(
                        f"janus exited with {self.process.returncode} at start "
                        f"(see {self.config.workdir / 'janus.log'})"
                    )
                try:
                    await client.info()
                    return
                except JanusUnreachable:
                    if loop.time() > deadline:
                        raise RuntimeError("janus did not answer within 15 s") from None
                    await asyncio.sleep(0.05)
        finally:
            await client.aclose()

    async def _supervise(self) -> None:
        attempt = 0
        while not self._stopping:
            assert self.process is not None
            code = await self.process.wait()
            if self._stopping:
                return
            delay = RESTART_DELAYS[min(attempt, len(RESTART_DELAYS) - 1)]
            log.warning("janus exited with %s; restarting in %.0f s", code, delay)
            await asyncio.sleep(delay)
            attempt += 1
            try:
                await self._spawn()
                self.restarts += 1
                attempt = 0
            except (RuntimeError, OSError) as exc:
                log.warning("janus did not restart: %s", exc)

    async def stop(self) -> None:
        self._stopping = True
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        process = self.process
        if process is not None and process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 5.0)
            except TimeoutError:
                process.kill()
                await process.wait()
