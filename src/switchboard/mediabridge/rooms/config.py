"""The ``[sfu]`` table of the bridge's TOML file (the trunks file) and the ``--sfu`` options.

::

    [sfu]
    janus = "local"                 # "off", "local" (start and supervise Janus) or its API URL
    admin_url = ""                  # with a URL: the admin API, for the packet counters
    admin_secret_env = ""           # with a URL: the variable holding the admin secret
    rtp_ports = "20000-20999"       # local: Janus's RTP/RTCP port range
    nat_1_1 = ""                    # local: the public address of a 1:1 NAT (cloud instances)
    stun_server = ""                # local: host:port of a STUN server, behind other NATs
    ice_enforce_list = ""           # local: the only interfaces ICE gathers on (e.g. "eth0")
    ice_lite = "auto"               # local: "true", "false", or "auto" (lite unless stun_server)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from switchboard.mediabridge.media import parse_range

KEYS = {"janus", "admin_url", "admin_secret_env", "rtp_ports", "nat_1_1", "stun_server",
        "ice_enforce_list", "ice_lite"}  # fmt: skip
ICE_LITE = ("auto", "true", "false")
DEFAULT_RTP_PORTS = "20000-20999"


class SfuConfigError(ValueError):
    """The ``[sfu]`` table cannot be used; the message names the key."""


@dataclass(frozen=True)
class SfuConfig:
    janus: str = "off"
    admin_url: str = ""
    admin_secret: str = ""
    rtp_ports: tuple[int, int] = (20000, 20999)
    nat_1_1: str = ""
    stun_server: str = ""
    ice_enforce_list: str = ""
    ice_lite: str = "auto"

    @property
    def local(self) -> bool:
        return self.janus == "local"

    @property
    def lite(self) -> bool:
        """ICE lite for a local Janus: browsers check and nominate, Janus only answers
        (docs/decisions/0822-janus-ice-lite.md); not behind a NAT that needs STUN."""
        return self.ice_lite == "true" or (self.ice_lite == "auto" and not self.stun_server)


def sfu_config(table: object, environ: Mapping[str, str], where: str = "sfu") -> SfuConfig:
    if table is None:
        return SfuConfig()
    if not isinstance(table, dict):
        raise SfuConfigError(f"{where}: must be a table")
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise SfuConfigError(f"{where}.{unknown[0]}: unknown key")
    for key, value in table.items():
        if not isinstance(value, str):
            raise SfuConfigError(f"{where}.{key}: must be a string")
    janus = table.get("janus", "off").strip()
    if janus not in ("off", "local") and not janus.startswith(("http://", "https://")):
        raise SfuConfigError(f'{where}.janus: "off", "local" or the http(s) URL of Janus\'s API')
    try:
        ports = parse_range(table.get("rtp_ports", DEFAULT_RTP_PORTS))
    except ValueError as exc:
        raise SfuConfigError(f"{where}.rtp_ports: {exc}") from None
    ice_lite = table.get("ice_lite", "auto").strip()
    if ice_lite not in ICE_LITE:
        raise SfuConfigError(f'{where}.ice_lite: "auto", "true" or "false"')
    secret_env = table.get("admin_secret_env", "").strip()
    if secret_env and secret_env not in environ:
        raise SfuConfigError(
            f"{where}.admin_secret_env: environment variable {secret_env} is unset"
        )
    return SfuConfig(
        janus=janus, admin_url=table.get("admin_url", "").strip(),
        admin_secret=environ.get(secret_env, "") if secret_env else "", rtp_ports=ports,
        nat_1_1=table.get("nat_1_1", "").strip(), stun_server=table.get("stun_server", "").strip(),
        ice_enforce_list=table.get("ice_enforce_list", "").strip(), ice_lite=ice_lite,
    )  # fmt: skip
