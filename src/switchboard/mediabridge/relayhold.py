"""A hold passed on from one leg of an office-tab relay to the other (decision 0333).

When one far end holds the call (its new offer is ``sendonly`` or ``inactive``) or resumes it,
the bridge answers it (``offeranswer.CallMedia``) and offers the other far end the same
direction in a re-INVITE of its own: the user's phone shows the call held while the caller's
music on hold still reaches it, and the held side's silence is not mistaken for a dead call.
Changes that come while a re-INVITE is out are folded: the latest direction is sent next.
A refused re-INVITE leaves that leg as it was, and the call goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from switchboard.mediabridge.offeranswer import CallMedia
from switchboard.mediabridge.sip.dialog import Dialog

log = logging.getLogger("switchboard.mediabridge")


class HoldFollower:
    """Offers ``dialog``'s far end the direction the other leg's far end asked for."""

    def __init__(self, dialog: Dialog, media: CallMedia) -> None:
        self.dialog = dialog
        self.media = media
        self.wanted = self.sent = "sendrecv"
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def follow(self, direction: str) -> None:
        """The other leg's far end now asks for ``direction``."""
        self.wanted = direction
        self._wake.set()
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self.wanted != self.sent and not self.dialog.ended:
                direction = self.wanted
                answer = await self.dialog.reinvite(self.media.offer(direction))
                if answer is None or not self.media.answered(answer):
                    log.info("SIP call %s: %s not passed on", self.dialog.call_id, direction)
                    break
                self.sent = direction
                log.info("SIP call %s: %s passed on", self.dialog.call_id, direction)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def follow_each_other(
    first: tuple[Dialog, CallMedia], second: tuple[Dialog, CallMedia]
) -> tuple[HoldFollower, HoldFollower]:
    """Each leg's holds passed on to the other; close the two followers when the relay ends."""
    to_second, to_first = HoldFollower(*second), HoldFollower(*first)
    first[1].on_offer = to_second.follow
    second[1].on_offer = to_first.follow
    return to_first, to_second
