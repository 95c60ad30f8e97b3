"""The simulated bridge run in this process, when ``SWITCHBOARD_BRIDGE_URL`` is empty.

The simulator is reached over HTTP through an in-process transport, and its callbacks go to the
platform's bridge endpoints the same way. It is assembled here, above the platform's services
that the endpoints call; the application and the worker register it with ``bridging.client``
(``run_in_process(in_process_simulator)``), so that ``bridge_for`` finds it without the client
importing the platform built on it. The simulator mounted at ``/bridge-sim`` next to the
platform is made here too, with the same secret.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import httpx

from switchboard.bridge.simulator import SimulatedBridge
from switchboard.platform.bridging.client import (
    SIMULATOR_BASE,
    TIMEOUT,
    BridgeClient,
    bridge_secret,
)
from switchboard.platform.callbacks.endpoints import create_bridge_callback_app
from switchboard.platform.calls.tasks import heartbeat
from switchboard.runtime import Runtime

log = logging.getLogger("switchboard.bridge")


class LeaseKeeper:
    """Renews the leases of the calls this process's built-in simulator holds, while it holds
    any, so that another process's reconciliation does not take them for orphans (the API
    process may run without the dispatcher, whose pass renews them too)."""

    def __init__(self, runtime: Runtime, simulator: SimulatedBridge) -> None:
        self._runtime = runtime
        self._simulator = simulator
        self._task: asyncio.Task[None] | None = None

    def poke(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        interval = self._runtime.settings.call_lease_seconds / 3
        while self._simulator.busy:
            await asyncio.sleep(interval)
            try:
                await heartbeat(self._runtime)
            except Exception:
                log.exception("renewing call leases failed")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def in_process_simulator(runtime: Runtime, callback_url: str) -> BridgeClient:
    secret = bridge_secret(runtime)
    callbacks = httpx.AsyncClient(
        transport=httpx.ASGITransport(
            app=create_bridge_callback_app(runtime), raise_app_exceptions=False
        ),
        base_url=runtime.settings.public_base_url,
        timeout=TIMEOUT,
    )
    simulator = SimulatedBridge(
        secret=secret, speed=runtime.settings.sim_speed, clock=runtime.clock,
        callback_client=callbacks,
    )  # fmt: skip
    return BridgeClient(
        base_url=SIMULATOR_BASE,
        secret=secret,
        callback_url=callback_url,
        simulator=simulator,
        keeper=LeaseKeeper(runtime, simulator),
    )


def mounted_simulator(runtime: Runtime) -> SimulatedBridge:
    """The simulator served at ``/bridge-sim`` next to the platform, for a deployment that
    wants a bridge over real HTTP (``SWITCHBOARD_BRIDGE_URL=<base>/bridge-sim``)."""
    return SimulatedBridge(
        secret=bridge_secret(runtime), speed=runtime.settings.sim_speed, clock=runtime.clock
    )
