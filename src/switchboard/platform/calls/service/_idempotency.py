"""``Idempotency-Key`` on ``POST /v1/calls``: a retried request gets the first answer.

The key's row is inserted first, in the request's transaction, and completed with the answer
before the commit: a concurrent request with the same key waits for that transaction (its
insert blocks on the unique key on PostgreSQL; SQLite serialises writers), then reads the
committed answer. A request that fails (a bridge error) rolls its row back with everything
else, so the retry dials afresh.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.bearer import Caller
from switchboard.kit.errors import BadRequest, Conflict
from switchboard.platform.calls import repository
from switchboard.platform.calls.models import CallIdempotencyKey
from switchboard.platform.calls.schemas import CallCreate, CallCreated
from switchboard.platform.calls.service._create import create_call, create_call_after_dial
from switchboard.runtime import Runtime

KEY_TTL = dt.timedelta(hours=24)
KEY_RE = re.compile(r"^[\x21-\x7e]{1,255}$")


class IdempotencyKeyReused(Conflict):
    """The key was used within 24 hours with another request body (409)."""

    code = "idempotency_key_reused"


def _body_hash(runtime: Runtime, body: CallCreate) -> str:
    canonical = orjson.dumps(body.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
    key = ("idempotency:" + runtime.settings.secret_key).encode()
    return hmac.new(key, canonical, hashlib.sha256).hexdigest()


def _replay(row: CallIdempotencyKey, body_hash: str) -> CallCreated:
    if not hmac.compare_digest(row.body_hash, body_hash):
        raise IdempotencyKeyReused(
            "this Idempotency-Key was used in the last 24 hours with a different request body;"
            " use a new key for a new call"
        )
    return CallCreated.model_validate_json(row.response)


async def place_call(
    *,
    runtime: Runtime,
    caller: Caller,
    body: CallCreate,
    owner: str,
    idempotency_key: str | None,
) -> tuple[CallCreated, bool]:
    """``create_call``, at most once per key and tenant in 24 hours; True when replayed.

    Without a key the write transaction begins after the dial (``create_call_after_dial``);
    with one, the key's row is written first and the whole request is one transaction."""
    if idempotency_key is None:
        created = await create_call_after_dial(
            runtime.db, runtime=runtime, caller=caller, body=body, owner=owner
        )
        return created, False
    if not KEY_RE.match(idempotency_key):
        raise BadRequest("Idempotency-Key: 1 to 255 printable ASCII characters, no spaces")
    async with runtime.db.transaction() as session:
        return await _place_once(
            session, runtime=runtime, caller=caller, body=body, owner=owner, key=idempotency_key
        )


async def _place_once(
    session: AsyncSession, *, runtime: Runtime, caller: Caller, body: CallCreate, owner: str,
    key: str,
) -> tuple[CallCreated, bool]:  # fmt: skip
    now = runtime.clock.now()
    body_hash = _body_hash(runtime, body)
    row = await repository.idempotency_key(session, tenant_id=caller.tenant_id, key=key)
    if row is not None and row.expires_at <= now:
        await repository.delete_idempotency_key(session, row)
        row = None
    if row is not None:
        return _replay(row, body_hash), True
    row = CallIdempotencyKey(
        tenant_id=caller.tenant_id, key=key, body_hash=body_hash, call_id="",
        response="", created_at=now, expires_at=now + KEY_TTL,
    )  # fmt: skip
    if not await repository.reserve_idempotency_key(session, row):
        first = await repository.idempotency_key(session, tenant_id=caller.tenant_id, key=key)
        assert first is not None  # the concurrent request committed it
        return _replay(first, body_hash), True
    created = await create_call(session, runtime=runtime, caller=caller, body=body, owner=owner)
    row.call_id = created.call_id
    row.response = created.model_dump_json(by_alias=True)
    await session.flush()
    return created, False
