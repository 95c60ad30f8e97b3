"""The trunks file: where outbound INVITEs go, one TOML table per trunk id.

::

    [trunks.carrier-a]
    uri = "sip:127.0.0.1:5070"   # where INVITEs go
    transport = "udp"            # udp or tcp
    username = "acct"            # optional digest auth (401/407)
    password_env = "CARRIER_A_PASSWORD"
    from_domain = "pbx.example.net"
    ring_timeout_sec = 30
    register = true              # keep the bridge registered (needs username)
    register_expires = 3600      # seconds asked of the registrar
    options_ping_sec = 30        # ask the trunk with OPTIONS this often (0: never)

An ``[sfu]`` table configures the rooms' SFU (``rooms/config.py``).
A bad file is refused when the bridge starts, with a message naming the key at fault.

``Limits`` holds what the bridge takes on from the network (``--max-inbound-calls``,
``--rtp-timeout-sec``; decisions 0326 and 0327).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from aiosipua import parse_uri

Transport = Literal["udp", "tcp"]
KEYS = {
    "uri", "transport", "username", "password_env", "from_domain", "ring_timeout_sec",
    "register", "register_expires", "options_ping_sec",
}  # fmt: skip
DEFAULT_RING_TIMEOUT_SEC = 30.0
DEFAULT_REGISTER_EXPIRES = 3600
REGISTER_EXPIRES_RANGE = (60, 86400)
OPTIONS_PING_RANGE = (5, 3600)  # or 0: never
DEFAULT_MAX_INBOUND_CALLS = 100
DEFAULT_RTP_TIMEOUT_SEC = 60.0
# what a 503 (at capacity, or while the platform cannot be reached) asks the caller's side to
# wait before it sends the bridge calls again
RETRY_AFTER_SEC = 5


@dataclass(frozen=True)
class Limits:
    """``max_inbound_calls``: inbound INVITEs taken at once, from arrival to the call's end (more
    are refused 503 with ``Retry-After``); ``rtp_timeout_sec``: an answered call whose far end
    sends neither RTP nor RTCP for this long is hung up (0: never)."""

    max_inbound_calls: int = DEFAULT_MAX_INBOUND_CALLS
    rtp_timeout_sec: float = DEFAULT_RTP_TIMEOUT_SEC


class TrunksError(ValueError):
    """The trunks file cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Trunk:
    id: str
    uri: str
    host: str
    port: int
    transport: Transport = "udp"
    username: str = ""
    password: str = field(default="", repr=False)
    from_domain: str = ""
    ring_timeout_sec: float = DEFAULT_RING_TIMEOUT_SEC
    register: bool = False  # keep a binding at the trunk's registrar (sip/register.py)
    register_expires: int = DEFAULT_REGISTER_EXPIRES
    options_ping_sec: int = 0  # OPTIONS this often, a trunk that fails is tried last (0: never)

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)


def load_trunks(path: Path, environ: Mapping[str, str]) -> dict[str, Trunk]:
    """Read and check the trunks file; passwords come from the environment variables it names."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TrunksError(f"{path}: cannot read the trunks file ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise TrunksError(f"{path}: not valid TOML ({exc})") from None
    extra = sorted(set(data) - {"trunks", "sfu"})
    if extra:
        raise TrunksError(f"{path}: unknown key {extra[0]!r} (only [trunks.<id>] and [sfu])")
    tables = data.get("trunks")
    if not isinstance(tables, dict) or not tables:
        raise TrunksError(f"{path}: 'trunks' must hold at least one [trunks.<id>] table")
    return {trunk_id: _trunk(path, trunk_id, table, environ) for trunk_id, table in tables.items()}


def _trunk(path: Path, trunk_id: str, table: object, environ: Mapping[str, str]) -> Trunk:
    where = f"{path}: trunks.{trunk_id}"
    if not isinstance(table, dict):
        raise TrunksError(f"{where}: must be a table")
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise TrunksError(f"{where}.{unknown[0]}: unknown key")

    def text(key: str, default: str = "") -> str:
        value = table.get(key, default)
        if not isinstance(value, str):
            raise TrunksError(f"{where}.{key}: must be a string")
        return value.strip()

    uri = text("uri")
    if not uri:
        raise TrunksError(f'{where}.uri: required (e.g. "sip:carrier.example.net:5060")')
    try:
        parsed = parse_uri(uri) if uri.lower().startswith("sip:") else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.scheme != "sip" or not parsed.host:
        raise TrunksError(f"{where}.uri: not a sip: URI with a host ({uri!r})")
    transport = text("transport", "udp").lower()
    if transport not in ("udp", "tcp"):
        raise TrunksError(f'{where}.transport: must be "udp" or "tcp"')
    username = text("username")
    password_env = text("password_env")
    password = ""
    if password_env:
        if password_env not in environ:
            raise TrunksError(f"{where}.password_env: environment variable {password_env} is unset")
        password = environ[password_env]
    elif username:
        raise TrunksError(f"{where}.password_env: required with username")
    timeout = table.get("ring_timeout_sec", DEFAULT_RING_TIMEOUT_SEC)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 600:
        raise TrunksError(f"{where}.ring_timeout_sec: must be a number of seconds in (0, 600]")
    register = table.get("register", False)
    if not isinstance(register, bool):
        raise TrunksError(f"{where}.register: must be true or false")
    if register and not username:
        raise TrunksError(f"{where}.register: needs username (the registered user)")

    def seconds(key: str, default: int, span: tuple[int, int], off: bool = False) -> int:
        """Whole seconds in ``span`` (or 0 when ``off`` allows it)."""
        value = table.get(key, default)
        low, high = span
        if isinstance(value, bool) or not isinstance(value, int):
            value = -1
        if not (low <= value <= high or (off and value == 0)):
            either = "0 or " if off else ""
            raise TrunksError(f"{where}.{key}: must be {either}whole seconds in [{low}, {high}]")
        return value

    expires = seconds("register_expires", DEFAULT_REGISTER_EXPIRES, REGISTER_EXPIRES_RANGE)
    ping = seconds("options_ping_sec", 0, OPTIONS_PING_RANGE, off=True)
    return Trunk(
        id=trunk_id, uri=uri, host=parsed.host.strip("[]"), port=parsed.port or 5060,
        transport="tcp" if transport == "tcp" else "udp", username=username, password=password,
        from_domain=text("from_domain") or parsed.host, ring_timeout_sec=float(timeout),
        register=register, register_expires=expires, options_ping_sec=ping,
    )  # fmt: skip
