"""Subscriptions through the public surface: the REST view (spec 2.10, 4.7) and the CLI."""

from __future__ import annotations

import asyncio
import datetime as dt
import socket

import orjson
import pytest
from click.testing import CliRunner, Result
from httpx import AsyncClient

from switchboard.kit.clock import ManualClock
from switchboard.platform.webhooks.cli import webhook_cli
from switchboard.platform.webhooks.tasks import deliver_due
from switchboard.runtime import Runtime
from tests.conftest import TEST_SECRET
from tests.factories import TenantFixture
from tests.webhooks.conftest import Receiver, fire, subscribe

FIELDS = {
    "id",
    "url",
    "events",
    "active",
    "createdAtUtc",
    "createdBy",
    "lastFiredUtc",
    "failures",
}


async def test_rest_view_lists_own_subscriptions_without_secret(
    app_client: AsyncClient,
    runtime: Runtime,
    clock: ManualClock,
    acme: TenantFixture,
    globex: TenantFixture,
) -> None:
    first, secret = await subscribe(runtime, acme, "http://127.0.0.1:9/a", ["call.started"])
    clock.advance(1)  # listed oldest first
    await subscribe(runtime, acme, "http://127.0.0.1:9/b")
    await subscribe(runtime, globex, "http://127.0.0.1:9/g")

    response = await app_client.get(
        "/api.ashx/v1/webhooks?limit=1", headers=await acme.auth(app_client)
    )
    assert response.status_code == 200
    page = response.json()
    assert (page["total"], page["limit"], page["offset"]) == (2, 1, 0)
    assert page["next"] == "/api.ashx/v1/webhooks?limit=1&offset=1"
    [item] = page["data"]
    assert set(item) == FIELDS
    assert item == {
        "id": first,
        "url": "http://127.0.0.1:9/a",
        "events": ["call.started"],
        "active": True,
        "createdAtUtc": "2026-01-01T12:00:00Z",
        "createdBy": "test",
        "lastFiredUtc": None,
        "failures": 0,
    }
    assert len(first) == 16
    int(first, 16)
    assert secret not in response.text
    assert "secret" not in response.text.lower()

    response = await app_client.get(
        "/api.ashx/v1/webhooks?offset=1", headers=await acme.auth(app_client)
    )
    assert [i["url"] for i in response.json()["data"]] == ["http://127.0.0.1:9/b"]
    assert response.json()["next"] is None

    response = await app_client.get("/api.ashx/v1/webhooks", headers=await globex.auth(app_client))
    assert [i["url"] for i in response.json()["data"]] == ["http://127.0.0.1:9/g"]


async def test_rest_view_needs_an_admin_bearer(
    app_client: AsyncClient, acme: TenantFixture
) -> None:
    response = await app_client.get("/api.ashx/v1/webhooks")
    assert response.status_code == 401
    response = await app_client.get(
        "/api.ashx/v1/webhooks", headers=await acme.auth(app_client, "user")
    )
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"
    response = await app_client.get(
        "/api.ashx/v1/webhooks?limit=501", headers=await acme.auth(app_client)
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


class Cli:
    """Runs ``switchboard webhook ...`` against the test database, as an operator would."""

    def __init__(self, runtime: Runtime, clock: ManualClock) -> None:
        self.clock = clock
        settings = runtime.settings
        self.env = {
            "SWITCHBOARD_DATABASE_URL": settings.resolved_database_url,
            "SWITCHBOARD_SECRET_KEY": TEST_SECRET,
            "SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE": ",".join(settings.webhook_allow_private),
        }

    async def __call__(self, *args: str) -> Result:
        runner = CliRunner()
        result = await asyncio.to_thread(runner.invoke, webhook_cli, list(args), env=self.env)
        self.clock.set(dt.datetime.now(dt.UTC))  # the CLI ran on the system clock
        return result

    async def json(self, *args: str) -> list[dict[str, object]]:
        result = await self(*args)
        assert result.exit_code == 0, result.output
        return [orjson.loads(line) for line in result.output.splitlines() if line]


@pytest.fixture
def cli(runtime: Runtime, clock: ManualClock) -> Cli:
    clock.set(dt.datetime.now(dt.UTC))
    return Cli(runtime, clock)


async def test_cli_manages_subscriptions_end_to_end(
    cli: Cli, runtime: Runtime, org: TenantFixture, other_org: TenantFixture, receiver: Receiver
) -> None:
    [created] = await cli.json(
        "create", "--tenant", org.name, "--url", receiver.url("/cli"), "--events", "*"
    )
    sub_id, secret = str(created["id"]), str(created["secret"])
    assert set(created) == {"id", "secret"}
    assert secret.startswith("whsec_")

    [listed] = await cli.json("list", "--tenant", org.name)
    assert listed["id"] == sub_id
    assert listed["events"] == ["*"]
    assert secret not in str(listed)
    assert await cli.json("list", "--tenant", other_org.name) == []

    [queued] = await cli.json("test", "--tenant", org.name, sub_id)
    assert queued["event"] == "webhook.test"
    assert await deliver_due(runtime) == 1
    [request] = receiver.requests
    assert request.headers["X-Platform-Event"] == "webhook.test"
    assert request.headers["X-Platform-Delivery-Id"] == queued["deliveryId"]
    assert orjson.loads(request.body)["event"] == "webhook.test"

    [logged] = await cli.json("deliveries", "--tenant", org.name, sub_id)
    assert logged["deliveryId"] == queued["deliveryId"]
    assert (logged["attempt"], logged["statusCode"]) == (1, 200)
    assert logged["response"] == "answer 200"
    assert isinstance(logged["latencyMs"], int)

    [again] = await cli.json("redeliver", "--tenant", org.name, str(queued["deliveryId"]))
    assert again == {"requeued": 1, "deliveryId": queued["deliveryId"]}
    assert await deliver_due(runtime) == 1
    assert [r.headers["X-Platform-Delivery-Id"] for r in receiver.requests] == [
        queued["deliveryId"]
    ] * 2
    assert receiver.requests[0].body == receiver.requests[1].body

    # Another tenant cannot touch it: not found, and nothing changes.
    result = await cli("delete", "--tenant", other_org.name, sub_id)
    assert result.exit_code == 2
    assert "no such webhook subscription" in result.output
    assert len(await cli.json("list", "--tenant", org.name)) == 1

    assert await cli.json("delete", "--tenant", org.name, sub_id) == [
        {"id": sub_id, "deleted": True}
    ]
    assert await cli.json("list", "--tenant", org.name) == []


async def test_the_delivery_log_keeps_each_attempt_as_it_was(
    cli: Cli, runtime: Runtime, clock: ManualClock, org: TenantFixture, receiver: Receiver
) -> None:
    """Every field of an attempt reads back as the sender saw it: the answer's text with
    quotes, a backslash, a line break and non-ASCII characters, the start time, and for a
    destination that refuses the connection, no status and the error."""
    said = 'said "ok" \\ then\nünïcödé ✓ {"not": "json"}'
    receiver.text["/log"] = said
    answered, _ = await subscribe(runtime, org, receiver.url("/log"), ["call.started"])
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        refused_url = f"http://127.0.0.1:{closed.getsockname()[1]}/gone"
    refused, _ = await subscribe(runtime, org, refused_url, ["call.started"])
    await fire(runtime, org, "call.started")
    started = (clock.now() + dt.timedelta(seconds=1)).replace(microsecond=0)  # whole seconds
    clock.set(started)
    assert await deliver_due(runtime) == 2

    [ok] = await cli.json("deliveries", "--tenant", org.name, answered)
    assert ok["event"] == "call.started"
    assert (ok["attempt"], ok["statusCode"], ok["error"]) == (1, 200, None)
    assert ok["response"] == said
    assert dt.datetime.fromisoformat(str(ok["startedUtc"])) == started
    [failed] = await cli.json("deliveries", "--tenant", org.name, refused)
    assert (failed["attempt"], failed["statusCode"], failed["response"]) == (1, None, "")
    assert str(failed["error"]).startswith("ConnectionRefusedError: ")
    assert dt.datetime.fromisoformat(str(failed["startedUtc"])) == started


async def test_cli_refuses_bad_input_and_changes_nothing(
    cli: Cli, org: TenantFixture, receiver: Receiver
) -> None:
    for args in (
        ["--url", receiver.url("/x"), "--events", "call.started,no.such.event"],
        ["--url", receiver.url("/x"), "--events", " , "],
        ["--url", "http://169.254.169.254/", "--events", "*"],
        ["--url", "gopher://example.com/", "--events", "*"],
    ):
        result = await cli("create", "--tenant", org.name, *args)
        assert result.exit_code == 2, result.output
        assert result.output.startswith("error:")
    result = await cli("create", "--tenant", "nobody", "--url", receiver.url("/x"), "--events", "*")
    assert result.exit_code == 2
    assert await cli.json("list", "--tenant", org.name) == []


async def test_cli_redelivers_everything_failed_since_a_time(
    cli: Cli, runtime: Runtime, clock: ManualClock, org: TenantFixture, receiver: Receiver
) -> None:
    receiver.status["/flaky"] = 500
    [created] = await cli.json(
        "create", "--tenant", org.name, "--url", receiver.url("/flaky"), "--events", "call.ended"
    )
    await fire(runtime, org, "call.ended", count=3)
    for _ in range(4):
        await deliver_due(runtime)
        clock.advance(1)
    assert len(receiver.requests) == 12

    receiver.status["/flaky"] = 200
    since = (clock.now() - dt.timedelta(minutes=5)).isoformat()
    assert await cli.json("redeliver", "--tenant", org.name, "--failed-since", since) == [
        {"requeued": 3}
    ]
    assert await deliver_due(runtime) == 3
    assert [r.headers["X-Platform-Attempt"] for r in receiver.requests[12:]] == ["1"] * 3
    later = (clock.now() + dt.timedelta(minutes=5)).isoformat()
    subscription = str(created["id"])
    assert await cli.json(
        "redeliver", "--tenant", org.name, "--failed-since", later, "--subscription", subscription
    ) == [{"requeued": 0}]
    result = await cli("redeliver", "--tenant", org.name)
    assert result.exit_code == 2
