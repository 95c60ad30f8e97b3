"""Webhook rules: subscriptions, the fan-out of emitted events, redelivery.

The admin UI and the CLI call these functions; they flush, never commit.
"""

from __future__ import annotations

import datetime as dt
import secrets
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import orjson
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock, iso_utc
from switchboard.kit.crypto import SecretBox
from switchboard.kit.db import after_commit
from switchboard.kit.destinations import IPNetwork, RefusedDestination, check_url
from switchboard.kit.errors import BadRequest, Conflict, NotFound
from switchboard.platform.events.catalogue import ALL_EVENTS, WEBHOOK_TEST
from switchboard.platform.events.models import Event
from switchboard.platform.events.payloads import check
from switchboard.platform.webhooks import repository
from switchboard.platform.webhooks.models import PENDING, Attempt, Delivery, Subscription
from switchboard.platform.webhooks.signing import new_secret

ALL = "*"
MAX_ATTEMPTS = 4
PAUSE_AFTER_FAILURES = 20
NOTIFY_CHANNEL = "switchboard_webhooks"
MAX_SUBSCRIPTIONS_PER_TENANT = 100


# Waking idle senders of this process once an emitting transaction commits.

_wakers: set[Callable[[], None]] = set()


def add_waker(waker: Callable[[], None]) -> None:
    _wakers.add(waker)


def remove_waker(waker: Callable[[], None]) -> None:
    _wakers.discard(waker)


def wake_senders() -> None:
    for waker in list(_wakers):
        waker()


async def _announce(session: AsyncSession) -> None:
    """Wake senders after commit: in-process directly, other processes by NOTIFY (PostgreSQL
    delivers it at commit and drops it on rollback, like the rows it announces)."""
    if session.info.get("webhooks_announced"):
        return
    session.info["webhooks_announced"] = True
    after_commit(session, wake_senders)
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        await session.execute(text(f"NOTIFY {NOTIFY_CHANNEL}"))


# Subscriptions.


def normalise_events(events: Sequence[str]) -> list[str]:
    """Known names in first-seen order, or ``["*"]``; raises BadRequest."""
    names: list[str] = []
    for raw in events:
        name = raw.strip()
        if not name:
            continue
        if name != ALL and name not in ALL_EVENTS:
            raise BadRequest(f"unknown event {name!r}", code="unknown_event")
        if name not in names:
            names.append(name)
    if not names:
        raise BadRequest("at least one event name, or *, is required")
    return [ALL] if ALL in names else names


async def validate_url(url: str, *, allow: Sequence[IPNetwork]) -> str:
    url = url.strip()
    try:
        await check_url(url, allow)
    except RefusedDestination as exc:
        raise BadRequest(str(exc), code="invalid_webhook_url") from None
    return url


async def create_subscription(
    session: AsyncSession,
    *,
    tenant_id: int,
    url: str,
    events: Sequence[str],
    created_by: str,
    clock: Clock,
    box: SecretBox,
    allow: Sequence[IPNetwork],
) -> tuple[Subscription, str]:
    """Create a subscription; returns it and its secret, which is never shown again."""
    names = normalise_events(events)
    url = await validate_url(url, allow=allow)
    _, total = await repository.page_subscriptions(session, tenant_id, limit=1, offset=0)
    if total >= MAX_SUBSCRIPTIONS_PER_TENANT:
        raise Conflict(f"a tenant has at most {MAX_SUBSCRIPTIONS_PER_TENANT} subscriptions")
    secret = new_secret()
    row = Subscription(
        id=secrets.token_hex(8),
        tenant_id=tenant_id,
        url=url,
        events=names,
        active=True,
        secret_sealed=box.seal(secret),
        created_at=clock.now(),
        created_by=created_by[:128],
        last_fired_at=None,
        failures=0,
    )
    session.add(row)
    await session.flush()
    return row, secret


async def list_subscriptions(
    session: AsyncSession, *, tenant_id: int, limit: int, offset: int
) -> tuple[list[Subscription], int]:
    return await repository.page_subscriptions(session, tenant_id, limit=limit, offset=offset)


async def get_subscription(
    session: AsyncSession, *, tenant_id: int, subscription_id: str
) -> Subscription:
    row = await repository.get_subscription(session, tenant_id, subscription_id)
    if row is None:
        raise NotFound("no such webhook subscription")
    return row


async def delete_subscription(
    session: AsyncSession, *, tenant_id: int, subscription_id: str
) -> None:
    """Delete it with its queue and log; a delivery already in flight may still land."""
    row = await get_subscription(session, tenant_id=tenant_id, subscription_id=subscription_id)
    await session.delete(row)
    await session.flush()


async def resume_subscription(
    session: AsyncSession, *, tenant_id: int, subscription_id: str
) -> Subscription:
    """Re-activate a paused subscription with a fresh failure tally (events emitted while it
    was paused are not sent; ``redeliver`` replays failed ones)."""
    row = await get_subscription(session, tenant_id=tenant_id, subscription_id=subscription_id)
    row.active = True
    row.failures = 0
    await session.flush()
    return row


# Deliveries.


def envelope(*, event: str, tenant: str, ts: dt.datetime, data: dict[str, Any]) -> bytes:
    """The exact body bytes of every attempt: ``{event, tenant, ts, data}``."""
    return orjson.dumps({"event": event, "tenant": tenant, "ts": iso_utc(ts), "data": data})


def order_key(data: dict[str, Any]) -> str | None:
    """The events of one call are delivered in order; other events are independent."""
    call_id = data.get("callId")
    return call_id[:64] if isinstance(call_id, str) and call_id else None


def _delivery(
    sub: Subscription,
    *,
    event: str,
    body: bytes,
    now: dt.datetime,
    key: str | None = None,
    seq: int = 0,
) -> Delivery:
    return Delivery(
        order_key=key,
        seq=seq,
        id=uuid.uuid4().hex,
        tenant_id=sub.tenant_id,
        subscription_id=sub.id,
        event=event,
        body=body,
        status=PENDING,
        attempts=0,
        created_at=now,
        next_attempt_at=now,
    )


async def fan_out(session: AsyncSession, *, event: Event, tenant_name: str) -> int:
    """One delivery per active subscription that wants ``event``, in the caller's transaction."""
    subscribers = [
        s for s in await repository.active_subscriptions(session, event.tenant_id)
        if s.wants(event.name)
    ]  # fmt: skip
    if not subscribers:
        return 0
    body = envelope(event=event.name, tenant=tenant_name, ts=event.created_at, data=event.payload)
    key = order_key(event.payload)
    session.add_all(
        [
            _delivery(s, event=event.name, body=body, now=event.created_at, key=key, seq=event.id)
            for s in subscribers
        ]
    )
    await session.flush()
    await _announce(session)
    return len(subscribers)


async def send_test(
    session: AsyncSession,
    *,
    tenant_id: int,
    tenant_name: str,
    subscription_id: str,
    clock: Clock,
) -> Delivery:
    """Queue a ``webhook.test`` delivery for this one subscription, whatever its events."""
    sub = await get_subscription(session, tenant_id=tenant_id, subscription_id=subscription_id)
    if not sub.active:
        raise Conflict("the subscription is paused; resume it first", code="subscription_paused")
    now = clock.now()
    data = {"subscriptionId": sub.id, "message": "test delivery"}
    check(WEBHOOK_TEST, data)
    body = envelope(event=WEBHOOK_TEST, tenant=tenant_name, ts=now, data=data)
    row = _delivery(sub, event=WEBHOOK_TEST, body=body, now=now)
    session.add(row)
    await session.flush()
    await _announce(session)
    return row


async def get_delivery(session: AsyncSession, *, tenant_id: int, delivery_id: str) -> Delivery:
    row = await repository.get_delivery(session, tenant_id, delivery_id)
    if row is None:
        raise NotFound("no such delivery")
    return row


async def delivery_log(
    session: AsyncSession, *, tenant_id: int, subscription_id: str, limit: int, offset: int
) -> list[Attempt]:
    """Attempts of one subscription, newest first."""
    await get_subscription(session, tenant_id=tenant_id, subscription_id=subscription_id)
    return await repository.page_attempts(
        session, tenant_id, subscription_id, limit=limit, offset=offset
    )


async def redeliverable(
    session: AsyncSession, *, tenant_id: int, subscription: Subscription, attempts: list[Attempt]
) -> set[str]:
    """The deliveries of ``attempts`` that ``redeliver`` would accept now: finished (not still
    queued or retrying), of an active subscription."""
    if not subscription.active:
        return set()
    ids = [a.delivery_id for a in attempts]
    return set(ids) - await repository.pending_among(session, tenant_id, ids)


async def redeliver(
    session: AsyncSession, *, tenant_id: int, delivery_id: str, clock: Clock
) -> Delivery:
    """Send one finished delivery again: same id, same bytes, attempts counted from 1."""
    row = await get_delivery(session, tenant_id=tenant_id, delivery_id=delivery_id)
    if row.status == PENDING:
        raise Conflict("the delivery is still queued", code="delivery_pending")
    sub = await get_subscription(session, tenant_id=tenant_id, subscription_id=row.subscription_id)
    if not sub.active:
        raise Conflict("the subscription is paused; resume it first", code="subscription_paused")
    await repository.requeue(session, row, now=clock.now())
    await _announce(session)
    return row


async def redeliver_failed(
    session: AsyncSession,
    *,
    tenant_id: int,
    since: dt.datetime,
    clock: Clock,
    subscription_id: str | None = None,
) -> int:
    """Queue again every failed delivery created since ``since`` to active subscriptions."""
    if subscription_id is not None:
        sub = await get_subscription(session, tenant_id=tenant_id, subscription_id=subscription_id)
        targets = [sub.id] if sub.active else []
    else:
        targets = [s.id for s in await repository.active_subscriptions(session, tenant_id)]
    if not targets:
        return 0
    count = await repository.requeue_failed_since(
        session, tenant_id, since=since, subscription_ids=targets, now=clock.now()
    )
    if count:
        await _announce(session)
    return count
