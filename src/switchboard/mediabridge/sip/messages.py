"""Building SIP requests and responses (RFC 3261 §8.1.1, §8.2.6)."""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence

from aiosipua import SipRequest, SipResponse, SipUri, parse_address, parse_uri

USER_AGENT = "switchboard-bridge/1"
REASONS = {
    100: "Trying", 180: "Ringing", 183: "Session Progress", 200: "OK", 400: "Bad Request",
    404: "Not Found", 405: "Method Not Allowed", 415: "Unsupported Media Type",
    422: "Session Interval Too Small", 480: "Temporarily Unavailable",
    481: "Call/Transaction Does Not Exist", 486: "Busy Here", 487: "Request Terminated",
    488: "Not Acceptable Here", 491: "Request Pending", 500: "Server Internal Error",
    501: "Not Implemented", 503: "Service Unavailable",
}  # fmt: skip


# what a header value cannot carry: C0 and C1 controls (CR and LF among them), Unicode line and
# paragraph separators
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def quoted(label: str) -> str:
    """``label`` as a quoted-string (RFC 3261 §25.1): controls become spaces, a double quote a
    single one, and a backslash is escaped."""
    return '"' + _UNSAFE.sub(" ", label).replace("\\", "\\\\").replace('"', "'") + '"'


def new_branch() -> str:
    return "z9hG4bK" + secrets.token_hex(8)


def new_tag() -> str:
    return secrets.token_hex(6)


def new_call_id(host: str) -> str:
    return f"{secrets.token_hex(10)}@{host}"


def host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def via(transport: str, local: tuple[str, int], branch: str) -> str:
    return f"SIP/2.0/{transport.upper()} {host_port(*local)};branch={branch};rport"


def request(
    method: str,
    uri: str,
    *,
    via_value: str,
    from_value: str,
    to_value: str,
    call_id: str,
    cseq: int,
    contact: str = "",
    body: bytes = b"",
    content_type: str = "application/sdp",
    route: Sequence[str] = (),
) -> SipRequest:
    msg = SipRequest(method=method, uri=uri)
    msg.headers.append("Via", via_value)
    for value in route:
        msg.headers.append("Route", value)
    msg.headers.set_single("Max-Forwards", "70")
    msg.headers.set_single("From", from_value)
    msg.headers.set_single("To", to_value)
    msg.headers.set_single("Call-ID", call_id)
    msg.headers.set_single("CSeq", f"{cseq} {method}")
    if contact:
        msg.headers.set_single("Contact", contact)
    msg.headers.set_single("User-Agent", USER_AGENT)
    if body:
        msg.headers.set_single("Content-Type", content_type)
        msg.body = body
    return msg


def response(
    req: SipRequest,
    status: int,
    *,
    to_tag: str = "",
    contact: str = "",
    body: bytes = b"",
    extra: dict[str, str] | None = None,
    reason: str = "",
) -> SipResponse:
    msg = SipResponse(status_code=status, reason_phrase=reason or REASONS.get(status, "Unknown"))
    for value in req.headers.get("via"):
        msg.headers.append("Via", value)
    msg.headers.set_single("From", req.headers.get_first("from") or "")
    to = req.headers.get_first("to") or ""
    if to_tag and ";tag=" not in to:
        to = f"{to};tag={to_tag}"
    msg.headers.set_single("To", to)
    msg.headers.set_single("Call-ID", req.headers.get_first("call-id") or "")
    msg.headers.set_single("CSeq", req.headers.get_first("cseq") or "")
    if 100 < status < 300:  # the proxies that record-route stay on the path (RFC 3261 §12.1.1)
        for value in req.headers.get("record-route"):
            msg.headers.append("Record-Route", value)
    if contact:
        msg.headers.set_single("Contact", contact)
    msg.headers.set_single("User-Agent", USER_AGENT)
    for name, value in (extra or {}).items():
        msg.headers.set_single(name, value)
    if body:
        msg.headers.set_single("Content-Type", "application/sdp")
        msg.body = body
    return msg


def top_branch(msg: SipRequest | SipResponse) -> str:
    vias = msg.via
    return (vias[0].branch or "") if vias else ""


def cseq_of(msg: SipRequest | SipResponse) -> tuple[int, str]:
    value = msg.cseq
    return (value.seq, value.method.upper()) if value else (0, "")


def user_of(value: str | None) -> str:
    """The user part of a header's or request line's URI, the number of a ``tel:`` URI
    (``anonymous`` when there is none)."""
    if not value:
        return "anonymous"
    inner = value[value.find("<") + 1 : value.rfind(">")] if "<" in value else value.strip()
    if inner.lower().startswith("tel:"):
        return inner[4:].split(";", 1)[0].strip() or "anonymous"
    try:
        uri = parse_uri(value) if value.lower().startswith("sip") else parse_address(value).uri
    except ValueError:
        return "anonymous"
    return uri.user or "anonymous"


def host_of(uri: str) -> str:
    try:
        return parse_uri(uri).host
    except ValueError:
        return ""


def contact_target(msg: SipRequest | SipResponse) -> tuple[str, tuple[str, int] | None]:
    """The remote target of a dialog: the Contact URI and its address."""
    contacts = msg.contact
    if not contacts:
        return "", None
    uri = contacts[0].uri
    host, port = uri.host.strip("[]"), uri.port or 5060
    user = f"{uri.user}@" if uri.user else ""
    return f"sip:{user}{host_port(host, port)}", (host, port)


def tag_of(value: str | None) -> str:
    if not value:
        return ""
    try:
        return parse_address(value).tag or ""
    except ValueError:
        return ""


def route_set(msg: SipRequest | SipResponse) -> tuple[str, ...]:
    """A dialog's route set (RFC 3261 §12.1): the Record-Route values of the INVITE as they are
    (the bridge answered it), or of the 2xx reversed (the bridge sent it): either way the proxy
    nearest the bridge first."""
    values = tuple(msg.headers.get("record-route"))
    return values if isinstance(msg, SipRequest) else values[::-1]


def routed(target: str, route: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """The Request-URI and the Route values of a request within a dialog (RFC 3261
    §12.2.1.1): the remote target through a loose router (``lr``) that heads the route set; a
    strict router is put in the Request-URI itself and the remote target at the route's end."""
    if not route:
        return target, ()
    first = _route_uri(route[0])
    if first is None or "lr" in first.params:
        return target, tuple(route)
    value = route[0]  # a name-addr (RFC 3261 §20.30): the URI is what its brackets hold
    return value[value.find("<") + 1 : value.rfind(">")], (*route[1:], f"<{target}>")


def next_hop(
    route: Sequence[str], target: tuple[str, int] | None, source: tuple[str, int]
) -> tuple[str, int]:
    """Where the dialog's requests go: the first route's host and port; without a route set, the
    remote target's (``target``), else ``source``, where the message that made the dialog came
    from. The host may be a name (``SipEndpoint.resolve`` looks it up)."""
    if not route:
        return target or source
    first = _route_uri(route[0])
    if first is None:
        return source
    return first.host.strip("[]"), first.port or 5060


def _route_uri(value: str) -> SipUri | None:
    try:
        return parse_address(value).uri
    except ValueError:
        return None
