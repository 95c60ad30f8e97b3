"""Session timers (RFC 4028): the answer to the far end's INVITE, re-INVITE or UPDATE
(decision 0328).

A carrier that runs a session timer sends ``Session-Expires`` (and ``Supported: timer``) in its
INVITE, and again in each re-INVITE or UPDATE that refreshes the session. The bridge's 2xx
names the refresher the request asked for (``refresher=uas``: the bridge), the far end when it
named none (``refresher=uac``), with ``Require: timer`` (RFC 4028 §9, table 2); an interval
under RFC 4028's floor of 90 s is refused 422 with ``Min-SE: 90``. A far end that does not say
``Supported: timer`` runs no timer: its ``Session-Expires`` (a proxy's) is left unanswered,
which turns the timer off (§7.2). The timer that follows (the bridge's own refreshes when a
far end's 2xx makes it the refresher, the end of a session nobody refreshed) is
``refresher.py`` (decision 0334)."""

from __future__ import annotations

from aiosipua import SipRequest
from aiosipua.session_timer import parse_session_expires

from switchboard.mediabridge.sip.checks import option_tags

MIN_SE = 90  # seconds: RFC 4028 §4, the smallest interval anyone may ask for


def session_timer(request: SipRequest) -> tuple[int, dict[str, str]]:
    """The status an INVITE, re-INVITE or UPDATE gets as far as its session timer goes (200, or
    422 for an interval under ``MIN_SE``) and the headers of that answer."""
    value = request.headers.get_first("session-expires") or request.headers.get_first("x")
    interval, refresher = parse_session_expires(value or "")
    if interval <= 0:
        return 200, {}  # no timer asked for (or none that can be read)
    if interval < MIN_SE:
        return 422, {"Min-SE": str(MIN_SE)}
    if "timer" not in (tag.lower() for tag in option_tags(request, "supported")):
        return 200, {}
    # As asked (§9: the UAS keeps a refresher the request names); when none is named the far
    # end refreshes, which keeps the refreshes where the timer was wanted (decision 0334).
    role = "uas" if refresher == "uas" else "uac"
    return 200, {"Session-Expires": f"{interval};refresher={role}", "Require": "timer"}
