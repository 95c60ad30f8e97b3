"""What the bridge accepts on its SIP port from anyone who can reach it (decision 0325).

A datagram that is not a SIP message at all (no request or status line) is dropped unanswered;
so is a message too large to answer without reflecting it back. A request the bridge can answer
but not take gets the RFC 3261 status that says why: 400 (a mandatory header missing or
malformed), 416 (a URI scheme other than sip, sips or tel), 420 (a ``Require`` naming an
extension other than ``timer``), 505 (a SIP version other than 2.0), 513 (a message over
``MAX_MESSAGE_BYTES``); methods it does not take get 405 or 501 with ``Allow``
(``method_refusal``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from aiosipua import SipRequest

# the methods the bridge takes (in a dialog, or INVITE and OPTIONS outside one)
ALLOWED = ("INVITE", "ACK", "BYE", "CANCEL", "OPTIONS", "NOTIFY", "INFO", "UPDATE")
ALLOW = ", ".join(ALLOWED)
# the extensions the bridge takes: session timers, either side refreshing (decisions 0328, 0334)
SUPPORTED = ("timer",)
# what an OPTIONS (a carrier's keep-alive probe) and the 2xx of an INVITE say the bridge takes
CAPABILITIES = {"Allow": ALLOW, "Accept": "application/sdp", "Supported": ", ".join(SUPPORTED)}
# methods that only make sense in a dialog or a transaction: outside one they are 481
IN_DIALOG = frozenset({"ACK", "BYE", "CANCEL", "NOTIFY", "INFO", "UPDATE", "PRACK"})
# methods of SIP's RFCs the bridge knows and does not take (405); any other is 501
KNOWN = frozenset({"REGISTER", "SUBSCRIBE", "PUBLISH", "MESSAGE", "REFER", "PRACK"})

# SIP over UDP stays under the path MTU (RFC 3261 §18.1.1); a large SDP or a multipart body with
# ISUP fits well below this, and nothing larger is a call anyone places.
MAX_MESSAGE_BYTES = 16 * 1024
# Via, From, To, Call-ID and CSeq are copied into every response: beyond this, answering at all
# would send a spoofed source a copy of what it sent, several times over (2xx retransmissions).
MAX_ECHOED_BYTES = 4 * 1024
MAX_CSEQ = 2**31 - 1

_WORD = r"[A-Za-z0-9.!%*_+`'~-]+"
REQUEST_LINE = re.compile(rf"({_WORD}) (\S+) (SIP/\d+\.\d+)$".encode())
STATUS_LINE = re.compile(rb"SIP/2\.0 [1-6]\d\d( .*)?$")
_HOST = r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*)(:\d{1,5})?"
_VIA = re.compile(rf"SIP\s*/\s*2\.0\s*/\s*{_WORD}\s+{_HOST}\s*(;.*)?$")
_SIP_URI = re.compile(rf"sips?:([^@<>\s]+@)?{_HOST}([;?][^<>\s]*)?$", re.IGNORECASE)
_TEL_URI = re.compile(r"tel:[^<>\s@]+$", re.IGNORECASE)
_CSEQ = re.compile(rf"(\d{{1,10}})\s+({_WORD})$")
_CALL_ID = re.compile(r"[^\s]{1,256}$")
_QUOTED_NAME = re.compile(r'^\s*"(?:[^"\\]|\\.)*"')
_MANDATORY = (("via", "Via"), ("from", "From"), ("to", "To"), ("call-id", "Call-ID"),
              ("cseq", "CSeq"))  # fmt: skip


@dataclass(frozen=True)
class Refusal:
    """The answer to a request the bridge does not take; ``status`` 0: no answer at all."""

    status: int
    reason: str = ""
    headers: dict[str, str] = field(default_factory=dict)


DROP = Refusal(0)
NO_DIALOG = Refusal(481, "Call/Transaction Does Not Exist")


def start_line(data: bytes) -> bytes | None:
    """The request or status line of a datagram, ``None`` when it is not a SIP message."""
    line = data.split(b"\n", 1)[0].rstrip(b"\r")
    if REQUEST_LINE.match(line) or STATUS_LINE.match(line):
        return line
    return None


def _uri_ok(text: str) -> bool:
    return bool(_SIP_URI.match(text) or _TEL_URI.match(text))


def _address_ok(value: str) -> bool:
    """A name-addr (``"Name" <uri>;params``) or an addr-spec (``uri;params``) with a SIP or tel
    URI whose host is well formed."""
    value = _QUOTED_NAME.sub("", value, count=1)  # a quoted display name may hold < and >
    lt, gt = value.find("<"), value.rfind(">")
    if lt != -1 or gt != -1:
        return 0 <= lt < gt and value.count("<") == 1 and _uri_ok(value[lt + 1 : gt])
    return _uri_ok(value.split(";", 1)[0].strip())


def _port_ok(value: str) -> bool:
    match = re.search(r"\]?:(\d{1,5})(?:[;?>]|$)", value)
    return match is None or 0 < int(match.group(1)) <= 65535


def request_refusal(request: SipRequest, version: str, data: bytes) -> Refusal | None:
    """Why the bridge cannot take ``request`` (parsed from ``data``) as SIP at all (``None``: it
    is well formed)."""
    headers = request.headers
    echoed = sum(len(v) for name, _ in _MANDATORY for v in headers.get(name))
    if echoed > MAX_ECHOED_BYTES:
        return DROP
    if len(data) > MAX_MESSAGE_BYTES:
        return Refusal(513, "Message Too Large")
    try:
        data.split(b"\r\n\r\n", 1)[0].decode("utf-8")
    except UnicodeDecodeError:
        return Refusal(400, "Header Not UTF-8")  # SIP's text is UTF-8 (RFC 3261 §7.3.1)
    for name, pretty in _MANDATORY:
        if not (headers.get_first(name) or "").strip():
            return Refusal(400, f"Missing {pretty} Header")
    if version != "SIP/2.0":
        return Refusal(505, "Version Not Supported")
    if not all(_VIA.match(via.strip()) and _port_ok(via) for via in headers.get("via")):
        return Refusal(400, "Malformed Via Header")
    cseq = _CSEQ.match((headers.get_first("cseq") or "").strip())
    if cseq is None or int(cseq.group(1)) > MAX_CSEQ:
        return Refusal(400, "Malformed CSeq Header")
    if cseq.group(2).upper() != request.method.upper():
        return Refusal(400, "CSeq Method Does Not Match")
    if not _CALL_ID.match((headers.get_first("call-id") or "").strip()):
        return Refusal(400, "Malformed Call-ID Header")
    for name, pretty in (("from", "From"), ("to", "To")):
        value = (headers.get_first(name) or "").strip()
        if not _address_ok(value) or not _port_ok(value):
            return Refusal(400, f"Malformed {pretty} Header")
    scheme = request.uri.split(":", 1)[0].lower()
    if scheme not in ("sip", "sips", "tel"):
        return Refusal(416, "Unsupported URI Scheme")
    if not _uri_ok(request.uri) or not _port_ok(request.uri):
        return Refusal(400, "Malformed Request-URI")
    length = (headers.get_first("content-length") or "").strip()
    if length and (not length.isdigit() or int(length) > len(request.body)):
        # a body shorter than its Content-Length is an error over UDP (RFC 3261 §18.3)
        return Refusal(400, "Bad Content-Length")
    required = option_tags(request, "require")
    unsupported = [tag for tag in required if tag.lower() not in SUPPORTED]
    if unsupported and request.method not in ("ACK", "CANCEL"):
        return Refusal(420, "Bad Extension", {"Unsupported": ", ".join(unsupported)})
    if request.method == "INVITE":
        contacts = headers.get("contact")
        if len(contacts) != 1 or not _address_ok(contacts[0].strip()):
            return Refusal(400, "Missing or Malformed Contact Header")
    return None


def option_tags(request: SipRequest, name: str) -> list[str]:
    """The option tags of a ``Require`` or ``Supported`` header, however many lines hold them."""
    return [tag.strip() for v in request.headers.get(name) for tag in v.split(",") if tag.strip()]


def method_refusal(method: str) -> Refusal:
    """The answer to a method the bridge does not take outside a dialog."""
    if method in IN_DIALOG:
        return NO_DIALOG
    if method in KNOWN or method in ALLOWED:
        return Refusal(405, "Method Not Allowed", {"Allow": ALLOW})
    return Refusal(501, "Not Implemented", {"Allow": ALLOW})
