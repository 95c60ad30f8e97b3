"""End-to-end delivery to a real local receiver: signatures, headers, retries, outbox."""

from __future__ import annotations

import base64
import hashlib
import hmac

import orjson
import pytest
from sqlalchemy import func, select

from switchboard.kit.clock import ManualClock
from switchboard.platform.webhooks.models import Delivery
from switchboard.platform.webhooks.outbox import emit
from switchboard.platform.webhooks.tasks import deliver_due
from switchboard.runtime import Runtime
from tests.factories import TenantFixture
from tests.webhooks.conftest import Receiver, fire, subscribe
from tests.webhooks.samples import sample


async def test_delivery_is_signed_with_both_schemes(
    runtime: Runtime, org: TenantFixture, receiver: Receiver
) -> None:
    sub_id, secret = await subscribe(runtime, org, receiver.url("/hook"))
    data = sample("call.ended", callId="c1", durationSec=12)
    await fire(runtime, org, "call.ended", data)

    assert await deliver_due(runtime) == 1

    [request] = receiver.requests
    body = request.body
    assert orjson.loads(body) == {
        "event": "call.ended",
        "tenant": "initech",
        "ts": "2026-01-01T12:00:00Z",
        "data": data,
    }
    headers = {k.lower(): v for k, v in request.headers.items()}
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert headers["x-platform-signature"] == f"sha256={expected}"
    assert headers["x-platform-event"] == "call.ended"
    assert headers["x-platform-attempt"] == "1"
    assert headers["content-type"] == "application/json"
    delivery_id = headers["x-platform-delivery-id"]
    assert headers["webhook-id"] == delivery_id
    # Standard Webhooks: key is the base64 after whsec_, message "{id}.{timestamp}.{body}".
    assert secret.startswith("whsec_")
    key = base64.b64decode(secret.removeprefix("whsec_"))
    assert len(key) >= 32
    signed = f"{delivery_id}.{headers['webhook-timestamp']}.".encode() + body
    digest = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    assert headers["webhook-signature"] == f"v1,{digest}"
    assert sub_id not in body.decode()


async def test_rolled_back_change_sends_nothing(
    runtime: Runtime, org: TenantFixture, receiver: Receiver
) -> None:
    await subscribe(runtime, org, receiver.url("/hook"))

    async def failing_change() -> None:
        async with runtime.db.transaction() as session:
            await emit(
                session,
                tenant_id=org.id,
                tenant_name=org.name,
                event="call.started",
                data=sample("call.started", callId="gone"),
                clock=runtime.clock,
            )
            raise RuntimeError("the change failed")

    with pytest.raises(RuntimeError):
        await failing_change()

    async with runtime.db.transaction() as session:
        assert await session.scalar(select(func.count()).select_from(Delivery)) == 0
    assert await deliver_due(runtime) == 0
    assert receiver.requests == []


async def test_retries_follow_the_delays_with_identical_bytes(
    runtime: Runtime, clock: ManualClock, org: TenantFixture, receiver: Receiver
) -> None:
    # Test settings: retries after 0.2 s, 0.4 s, 0.8 s.
    receiver.status["/hook"] = [500, 503, 404, 200]
    await subscribe(runtime, org, receiver.url("/hook"))
    await fire(runtime, org)

    assert await deliver_due(runtime) == 1
    for delay in (0.2, 0.4, 0.8):
        clock.advance(delay - 0.01)
        assert await deliver_due(runtime) == 0, "retried before its delay"
        clock.advance(0.01)
        assert await deliver_due(runtime) == 1
    clock.advance(10)
    assert await deliver_due(runtime) == 0

    attempts = receiver.at("/hook")
    assert [r.headers["X-Platform-Attempt"] for r in attempts] == ["1", "2", "3", "4"]
    assert len({r.body for r in attempts}) == 1
    assert len({r.headers["X-Platform-Signature"] for r in attempts}) == 1
    assert len({r.headers["X-Platform-Delivery-Id"] for r in attempts}) == 1


async def test_four_failed_attempts_finish_the_delivery(
    runtime: Runtime, clock: ManualClock, org: TenantFixture, receiver: Receiver
) -> None:
    receiver.status["/down"] = 500
    await subscribe(runtime, org, receiver.url("/down"))
    await fire(runtime, org)
    for _ in range(6):
        await deliver_due(runtime)
        clock.advance(1)
    assert len(receiver.at("/down")) == 4
    async with runtime.db.transaction() as session:
        delivery = (await session.scalars(select(Delivery))).one()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("failed", 4, 500)


async def test_redirects_are_not_followed(
    runtime: Runtime, org: TenantFixture, receiver: Receiver
) -> None:
    await subscribe(runtime, org, receiver.url("/redirect"))
    await fire(runtime, org)
    await deliver_due(runtime)
    assert [r.path for r in receiver.requests] == ["/redirect"]
    async with runtime.db.transaction() as session:
        delivery = (await session.scalars(select(Delivery))).one()
    assert (delivery.status, delivery.last_status_code) == ("pending", 302)


async def test_star_and_named_subscriptions(
    runtime: Runtime, org: TenantFixture, receiver: Receiver
) -> None:
    await subscribe(runtime, org, receiver.url("/all"), ["*"])
    await subscribe(runtime, org, receiver.url("/calls"), ["call.started", "call.ended"])
    await subscribe(runtime, org, receiver.url("/shares"), ["share.created"])
    await fire(runtime, org, "call.started")
    await fire(runtime, org, "room.peer.joined", {"room": "r1"})
    await fire(runtime, org, "call.ended")

    assert await deliver_due(runtime) == 5

    def events(path: str) -> list[str]:
        return sorted(r.headers["X-Platform-Event"] for r in receiver.at(path))

    assert events("/all") == ["call.ended", "call.started", "room.peer.joined"]
    assert events("/calls") == ["call.ended", "call.started"]
    assert events("/shares") == []


async def test_events_reach_only_their_tenant(
    runtime: Runtime, org: TenantFixture, other_org: TenantFixture, receiver: Receiver
) -> None:
    await subscribe(runtime, org, receiver.url("/acme"))
    await subscribe(runtime, other_org, receiver.url("/globex"))
    await fire(runtime, org, "call.started")
    await fire(runtime, other_org, "call.ended")
    await fire(runtime, other_org, "call.ended")

    assert await deliver_due(runtime) == 3
    assert [orjson.loads(r.body)["tenant"] for r in receiver.at("/acme")] == ["initech"]
    assert [orjson.loads(r.body)["tenant"] for r in receiver.at("/globex")] == ["umbrella"] * 2
