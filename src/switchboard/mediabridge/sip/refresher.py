"""A dialog's session timer (RFC 4028 §10, decision 0334): the bridge refreshes the session when
the far end made it the refresher, and ends a session the far end stopped refreshing.

The role and the interval come from the last 2xx that set them: the far end's to the bridge's
INVITE or re-INVITE (``refresher=uac`` or no refresher: the bridge, as the UAC, refreshes;
``uas``: the far end), or the bridge's own to the far end's INVITE, re-INVITE or UPDATE
(``refresher=uas`` when the request asked the bridge to refresh, else ``uac``, the far end). A
2xx without ``Session-Expires`` turns the timer off (§7.2, §9).

As the refresher the bridge sends a re-INVITE with its last SDP again at half the interval; the
refresh's 2xx sets the timer anew. A ``422`` raises the interval to its ``Min-SE`` and the
refresh goes again at once; a ``491`` (the far end's offer crossed it) goes again after RFC 3261
§14.1's random delay (``Dialog.offer``); no answer, ``408`` or ``481`` ends the call (BYE). Any
other refusal is tried again half-way through what remains of the session, and the call ends
when it runs out. As the refreshed side, the bridge ends the call when no refresh came before
the session expires, less the lesser of 32 s and a third of the interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from aiosipua import SipResponse
from aiosipua.session_timer import parse_session_expires

log = logging.getLogger("switchboard.mediabridge.sip")

# a refresh whose transaction failed this way: the session is gone (RFC 4028 §10)
SESSION_GONE = {0, 408, 481}
# how often a 422 may raise the interval of one refresh before the bridge gives up
MAX_422 = 3


def refresh_delay(interval: float) -> float:
    """When the refresher sends its refresh: half the interval (RFC 4028 §10)."""
    return interval / 2


def expiry_margin(interval: float) -> float:
    """How long before the session expires the refreshed side gives up on it: the lesser of
    32 s and a third of the interval (RFC 4028 §10)."""
    return min(32.0, interval / 3)


def expiry_delay(interval: float) -> float:
    """When the refreshed side ends a session nobody refreshed."""
    return interval - expiry_margin(interval)


def negotiated(response: SipResponse) -> tuple[int, bool] | None:
    """What the far end's 2xx to the bridge's INVITE or re-INVITE says: the interval and whether
    the bridge (the UAC of that transaction) refreshes; None: no session timer (§7.2). A 2xx
    that names no refresher leaves the choice to the UAC, and the bridge takes it."""
    interval, refresher = parse_session_expires(
        response.headers.get_first("session-expires") or response.headers.get_first("x") or ""
    )
    if interval <= 0:
        return None
    return interval, refresher != "uas"


def granted(session_expires: str) -> tuple[int, bool]:
    """What the bridge's own 2xx (the bridge its UAS) says in its ``Session-Expires``: the
    interval (0: none, no timer runs) and whether the bridge refreshes (``refresher=uas``)."""
    interval, refresher = parse_session_expires(session_expires)
    return (interval, refresher == "uas") if interval > 0 else (0, False)


def min_se(response: SipResponse) -> int:
    """The ``Min-SE`` of a 422 (0 when it names none that can be read)."""
    value = (response.headers.get_first("min-se") or "").split(";", 1)[0].strip()
    return int(value) if value.isdigit() else 0


class Refreshable(Protocol):
    """What the timer needs of its dialog (``sip/dialog.py``)."""

    call_id: str

    async def refresh(self) -> SipResponse | None:
        """Send one session refresh (a re-INVITE carrying ``SessionTimer.headers``); its final
        response, None when none came."""

    def expire(self, failure: str) -> None:
        """End the call: the session is over (the BYE is sent by whoever carries the call)."""


class SessionTimer:
    """One dialog's session timer, off until a 2xx sets it (``answered``, ``took``)."""

    def __init__(self, dialog: Refreshable) -> None:
        self.dialog = dialog
        self.interval = 0  # seconds; 0: no timer runs
        self.we_refresh = False
        self.min_se = 0  # the largest Min-SE a 422 named (sent with the bridge's refreshes)
        self._since = 0.0  # the loop's time of the last refresh
        self._rearmed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def headers(self) -> dict[str, str]:
        """The timer's headers in a re-INVITE of the bridge: every one of them, a hold passed
        on from a relay too, refreshes the session with the role as it stands."""
        headers = {"Supported": "timer"}
        if self.interval:
            role = "uac" if self.we_refresh else "uas"  # the bridge is this request's UAC
            headers["Session-Expires"] = f"{self.interval};refresher={role}"
        if self.min_se:
            headers["Min-SE"] = str(self.min_se)
        return headers

    def answered(self, response: SipResponse) -> None:
        """The far end's 2xx to the bridge's INVITE or re-INVITE."""
        found = negotiated(response)
        self._set(*(found or (0, False)))

    def took(self, session_expires: str) -> None:
        """The bridge answered the far end's INVITE, re-INVITE or UPDATE 2xx with this
        ``Session-Expires`` ("": with none)."""
        self._set(*granted(session_expires))

    def _set(self, interval: int, we_refresh: bool) -> None:
        if self._closed:
            return
        self.interval, self.we_refresh = interval, we_refresh
        self._since = asyncio.get_running_loop().time()
        self._rearmed.set()
        if interval and self._task is None:
            self._task = asyncio.ensure_future(self._run())

    def close(self) -> None:
        """The call is over: no more refreshes, no expiry."""
        self._closed = True
        self.interval = 0
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
        self._task = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self.interval:
                self._rearmed.clear()
                delay = (refresh_delay if self.we_refresh else expiry_delay)(self.interval)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(max(0.0, self._since + delay - loop.time())):
                        await self._rearmed.wait()
                        continue  # a refresh came (or the role changed): timed anew
                if not self.interval:
                    break
                if not self.we_refresh:
                    self._end(f"the session expired: no refresh within {self.interval} s")
                    break
                failure = await self._refresh()
                if failure:
                    self._end(failure)
                    break
        finally:
            if self._task is asyncio.current_task():
                self._task = None

    async def _refresh(self) -> str:
        """Refresh the session until a 2xx sets the timer anew; why the session is over, when
        it is ("": refreshed, or no longer the bridge's to refresh)."""
        loop = asyncio.get_running_loop()
        raised = 0
        while True:
            self._rearmed.clear()
            response = await self.dialog.refresh()
            if self._closed or self._rearmed.is_set():
                return ""  # the 2xx set the timer anew (``answered``), or the far end's refresh
            status = response.status_code if response is not None else 0
            described = f"{status} {response.reason_phrase}".strip() if response else "no answer"
            floor = min_se(response) if response is not None else 0
            if status == 422 and raised < MAX_422 and floor > self.interval:
                raised += 1
                self.min_se = self.interval = floor
                continue
            if status in SESSION_GONE:
                return f"the far end did not take the session refresh ({described})"
            left = self._since + expiry_delay(self.interval) - loop.time()
            log.info("call %s: session refresh refused (%s)", self.dialog.call_id, described)
            if left < 1:
                return f"the session expired: the far end refused its refresh ({described})"
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left / 2):
                    await self._rearmed.wait()
                    return ""

    def _end(self, failure: str) -> None:
        self.interval = 0
        self.dialog.expire(failure)
