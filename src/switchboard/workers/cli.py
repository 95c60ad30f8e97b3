"""``switchboard worker``: the background workers without the HTTP API."""

from __future__ import annotations

import asyncio
import signal

import click

from switchboard.platform.bridging.client import run_in_process
from switchboard.platform.callbacks.local import in_process_simulator
from switchboard.runtime import Runtime
from switchboard.settings import Settings
from switchboard.workers import all_workers


@click.command("worker")
def worker_cli() -> None:
    """Run the call dispatcher and the webhook sender until SIGTERM or SIGINT."""
    from switchboard.kit.logging import configure_logging

    settings = Settings()
    configure_logging(settings.log_level, settings.log_format)

    async def main() -> None:
        runtime = Runtime(settings)
        run_in_process(in_process_simulator)  # the bridge when SWITCHBOARD_BRIDGE_URL is empty
        runtime.workers.extend(all_workers())
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await runtime.start(run_workers=True)
        click.echo("worker running", err=True)
        try:
            await stop.wait()
        finally:
            await runtime.stop()

    asyncio.run(main())
