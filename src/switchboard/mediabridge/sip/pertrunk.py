"""One background job a trunk, for the trunks that ask for it: a registration
(``register.py``), an OPTIONS ping (``ping.py``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from switchboard.mediabridge.config import Trunk
from switchboard.mediabridge.sip.endpoint import SipEndpoint

Sleep = Callable[[float], Awaitable[None]]


@dataclass
class OnTrunk:
    """What a trunk's job works with: the SIP endpoint, the trunk, and the clock it reads and
    the sleep it waits with (a test records the waits instead)."""

    endpoint: SipEndpoint
    trunk: Trunk
    clock: Callable[[], float] = time.monotonic
    sleep: Sleep = asyncio.sleep


class TrunkJob(Protocol):
    async def run(self) -> None:
        """Until cancelled."""

    def status(self) -> dict[str, object]:
        """What ``/v1/health`` shows of it."""


Job = TypeVar("Job", bound=TrunkJob)


class PerTrunk(Generic[Job]):
    """``all``: trunk id -> its job. ``start`` runs each on a task of its own, ``aclose``
    cancels them."""

    def __init__(self, jobs: dict[str, Job]) -> None:
        self.all = jobs
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [asyncio.ensure_future(job.run()) for job in self.all.values()]

    def status(self) -> dict[str, dict[str, object]]:
        return {trunk_id: job.status() for trunk_id, job in self.all.items()}

    async def aclose(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
