"""``switchboard sim ...``: the simulated bridge on its own, and inbound calls on demand."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import click
import httpx
import orjson

from switchboard.bridge import protocol
from switchboard.bridge.simulator import SimulatedBridge
from switchboard.kit import heap
from switchboard.kit.clock import SystemClock
from switchboard.platform.bridging.client import TIMEOUT, bridge_secret
from switchboard.platform.rooms.simulate import sim_room
from switchboard.runtime import Runtime
from switchboard.settings import Settings

INBOUND_OUTCOMES = (
    "finished", "far-hangup", "transferred-to-vnum", "max-duration", "empty-room",
)  # fmt: skip
RECEPTIONIST_PROMPT = (
    "You are the receptionist. Greet the caller, find out what they need and help them. "
    "Opening hours are nine to five on weekdays. Offer to put the caller through to a colleague."
)


@click.group("sim")
def sim_cli() -> None:
    """The simulated media bridge: serve it, or produce inbound calls on demand."""


sim_cli.add_command(sim_room)


@sim_cli.command("bridge")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8090, show_default=True, type=int)
def serve_bridge(host: str, port: int) -> None:
    """Serve the simulated bridge over HTTP (point SWITCHBOARD_BRIDGE_URL at it)."""
    import uvicorn

    from switchboard.kit.logging import configure_logging

    settings = Settings()
    if not settings.bridge_secret:
        raise click.UsageError("set SWITCHBOARD_BRIDGE_SECRET, shared with the platform")
    configure_logging(settings.log_level, settings.log_format)
    simulator = SimulatedBridge(
        secret=settings.bridge_secret, speed=settings.sim_speed, clock=SystemClock(),
        callback_client=httpx.AsyncClient(timeout=TIMEOUT), platform_url=settings.public_base_url,
    )  # fmt: skip
    heap.settle()
    uvicorn.run(simulator.app, host=host, port=port, log_config=None, access_log=False)


def _run_inbound(
    *,
    tenant: str,
    sip: bool,
    number: str,
    from_number: str,
    outcome: str,
    speed: float | None,
    platform_url: str | None,
    office_tab: bool = False,
) -> None:
    settings = Settings()
    if speed is not None:
        settings = settings.model_copy(update={"sim_speed": speed})

    async def main() -> str:
        from switchboard.platform.callbacks.endpoints import create_bridge_callback_app
        from switchboard.platform.calls import repository
        from switchboard.platform.numbers.service import find_number, reveal_secrets

        runtime = Runtime(settings)
        try:
            async with runtime.db.transaction() as session:
                row = await repository.tenant_by_name(session, tenant)
                if row is None:
                    raise click.ClickException(f"no tenant named {tenant!r}")
                display_name, prompt, voice, language = (
                    "Reception",
                    RECEPTIONIST_PROMPT,
                    "Aoede",
                    "en-US",
                )
                rule = ""
                if office_tab:
                    from switchboard.platform.routing.service import resolve_inbound

                    rule = await resolve_inbound(
                        session, tenant_id=row.id, did=number, from_number=from_number
                    )
                    display_name = rule
                if not sip:
                    vnum = await find_number(session, tenant_id=row.id, number=number)
                    if vnum is None:
                        raise click.ClickException(
                            f"tenant {tenant!r} has no virtual number {number!r}"
                        )
                    _key, prompt = reveal_secrets(vnum, runtime.box)
                    display_name, voice, language = vnum.name, vnum.voice, vnum.language
            hooks = {"response": [_progress(time.monotonic())]}
            if platform_url:
                callbacks = httpx.AsyncClient(timeout=TIMEOUT, event_hooks=hooks)
                url = platform_url.rstrip("/") + protocol.CALLBACK_PATH
            else:
                callbacks = httpx.AsyncClient(
                    transport=httpx.ASGITransport(
                        app=create_bridge_callback_app(runtime), raise_app_exceptions=False
                    ),
                    base_url=settings.public_base_url,
                    timeout=TIMEOUT,
                    event_hooks=hooks,
                )
                url = settings.public_base_url + protocol.CALLBACK_PATH
            simulator = SimulatedBridge(
                secret=bridge_secret(runtime), speed=settings.sim_speed, clock=runtime.clock,
                callback_client=callbacks,
            )  # fmt: skip
            try:
                return await simulator.inbound_call(
                    callback_url=url, tenant=tenant, sip=sip, number=number,
                    from_number=from_number, display_name=display_name, prompt=prompt,
                    outcome=outcome, voice=voice, language=language,
                    source="office-tab" if office_tab else None, rule=rule,
                )  # fmt: skip
            finally:
                await simulator.aclose()
        finally:
            await runtime.db.dispose()

    click.echo(asyncio.run(main()))


def _progress(started: float) -> Callable[[httpx.Response], Awaitable[None]]:
    """Each callback the simulated call sends, on stderr as it is answered (stdout keeps only
    the call id, for scripts)."""

    async def report(response: httpx.Response) -> None:
        try:
            event = orjson.loads(response.request.content)
        except orjson.JSONDecodeError:
            return
        if not isinstance(event, dict):
            return
        elapsed = time.monotonic() - started
        call_id = event.get("callId") or event.get("call_id", "")
        kind = event.get("type", "?")
        click.echo(f"{elapsed:6.1f}s  {kind}  {call_id}  -> {response.status_code}", err=True)

    return report


_outcome = click.option(
    "--outcome", type=click.Choice(INBOUND_OUTCOMES), default="finished", show_default=True
)
_speed = click.option("--speed", type=float, default=None, help="Override SWITCHBOARD_SIM_SPEED")
_platform = click.option(
    "--platform-url",
    default=None,
    help="Post the callbacks to a running platform over HTTP instead of in-process",
)


@sim_cli.command("vnum")
@click.option("--tenant", required=True)
@click.option("--number", required=True, help="The virtual number the browser calls")
@click.option("--from", "from_number", default="browser", show_default=True)
@_outcome
@_speed
@_platform
def vnum(
    tenant: str, number: str, from_number: str, outcome: str, speed: float | None,
    platform_url: str | None,
) -> None:  # fmt: skip
    """A browser calls virtual number NUMBER; prints the call id when the call has ended."""
    _run_inbound(
        tenant=tenant, sip=False, number=number, from_number=from_number, outcome=outcome,
        speed=speed, platform_url=platform_url,
    )  # fmt: skip


@sim_cli.command("sip")
@click.option("--tenant", required=True)
@click.option("--did", required=True, help="The dialled inbound number")
@click.option("--from", "from_number", required=True, help="The calling number")
@click.option(
    "--office-tab",
    is_flag=True,
    help="The inbound route rings an office-tab user's phone (transcript source office-tab)",
)
@_outcome
@_speed
@_platform
def sip(
    tenant: str, did: str, from_number: str, office_tab: bool, outcome: str,
    speed: float | None, platform_url: str | None,
) -> None:  # fmt: skip
    """An inbound SIP call to the AI receptionist; prints the call id when it has ended."""
    _run_inbound(
        tenant=tenant, sip=True, number=did, from_number=from_number, outcome=outcome,
        speed=speed, platform_url=platform_url, office_tab=office_tab,
    )  # fmt: skip
