"""The sign-in lockout (decision 0006) and the device cookies that keep a user's own browsers out
of it (decision 0031; OWASP's "Slow Down Online Guessing Attacks with Device Cookies").

A browser where a user signs in with the password at the login page gets a sealed device
cookie: for each of the last ``MAX_DEVICES`` users signed in there, the tenant, the user, a
random nonce, a stamp of the user's credentials and an expiry. A later attempt in that browser
for one of those users counts its wrong passwords against the nonce (``DeviceFailures``), not
against the user, and the user's lockout does not refuse it; the nonce is locked as a user is.
Everything else (another browser, the password grant, a cookie forged, expired, of another
user or tenant, or sealed before a new password) counts against the user, as before.

A username no user of the tenant has is counted and locked exactly as a user would be
(``UnknownUserFailures``, named by a keyed hash of the name), so the lockout does not tell
which usernames exist. A tally quiet for ``FORGET_AFTER`` starts again, a user's as an unknown
name's: the purge deletes unknown names' tallies then, and a user's must not outlive them.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache

import orjson
from cryptography.exceptions import InvalidTag
from sqlalchemy import ColumnElement, and_, case, delete, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped
from sqlalchemy.orm.attributes import set_committed_value

from switchboard.auth.models import DeviceFailures, UnknownUserFailures, User, credential_stamp
from switchboard.kit.crypto import (
    SecretBox,
    constant_time_equals,
    derive_key,
    hmac_sha256_hex,
    sha256_hex,
)

MAX_LOCKOUT_SECONDS = 3600
# A tally (a user's or an unknown name's) whose last failure is this old starts again at one;
# longer than any lock, so a lock has always run out by then.
FORGET_AFTER = dt.timedelta(days=1)
DEVICE_COOKIE = "sb_idp_device"
# The users one browser is known for: a shared office computer, an admin with a second account.
MAX_DEVICES = 5
_MAX_COOKIE = 4096  # what a browser keeps of one cookie


def lock_seconds(failures: int, *, max_failures: int, lockout_seconds: int) -> int | None:
    """How long ``failures`` consecutive wrong passwords lock for: not at all below
    ``max_failures``, then ``lockout_seconds``, doubling with each further one up to an hour."""
    over = failures - max_failures
    if over < 0:
        return None
    return min(lockout_seconds << min(over, 16), MAX_LOCKOUT_SECONDS)


@dataclass(frozen=True, slots=True)
class Device:
    """One user's entry in a browser's device cookie; ``expires`` in Unix seconds."""

    tenant_id: int
    user_id: int
    nonce: str
    stamp: str
    expires: int

    def vouches_for(self, user: User) -> bool:
        """Whether the entry is the user's, sealed with the password and security stamp the
        user has now (a new password or "sign out everywhere" distrusts every device)."""
        return (
            self.tenant_id == user.tenant_id
            and self.user_id == user.id
            and constant_time_equals(self.stamp, credential_stamp(user))
        )


class DeviceCookies:
    """Seals and opens the device cookie (AES-GCM under a key of its own, derived from
    ``SWITCHBOARD_SECRET_KEY``): the browser can neither read nor forge it."""

    def __init__(self, master_secret: str) -> None:
        self._box = SecretBox(master_secret, purpose="idp-device-cookies")

    def open(self, raw: str | None, *, now: dt.datetime) -> list[Device]:
        """The unexpired entries of the cookie; none for a missing, forged or damaged one."""
        if not raw or len(raw) > _MAX_COOKIE:
            return []
        try:
            value = orjson.loads(self._box.open(raw))
        except (InvalidTag, ValueError, orjson.JSONDecodeError):
            return []
        devices: list[Device] = []
        for item in value[:MAX_DEVICES] if isinstance(value, list) else ():
            try:
                device = Device(**item)
                if device.expires > now.timestamp():
                    devices.append(device)
            except TypeError:
                continue
        return devices

    def seal(self, devices: Sequence[Device]) -> str:
        return self._box.seal(orjson.dumps([asdict(d) for d in devices[:MAX_DEVICES]]).decode())


@lru_cache(maxsize=4)
def device_cookies(master_secret: str) -> DeviceCookies:
    return DeviceCookies(master_secret)


def remember(
    devices: Sequence[Device], user: User, *, now: dt.datetime, ttl_seconds: int
) -> list[Device]:
    """The browser's entries once ``user`` signed in with the password: a new one for the user
    (a fresh nonce and expiry) first, the other users' after it."""
    fresh = Device(
        tenant_id=user.tenant_id,
        user_id=user.id,
        nonce=secrets.token_urlsafe(16),
        stamp=credential_stamp(user),
        expires=int(now.timestamp()) + ttl_seconds,
    )
    others = [d for d in devices if (d.tenant_id, d.user_id) != (user.tenant_id, user.id)]
    return [fresh, *others][:MAX_DEVICES]


def vouching(devices: Sequence[Device], user: User) -> Device | None:
    """The browser's entry that vouches for ``user``, if any."""
    return next((d for d in devices if d.vouches_for(user)), None)


# The device's tally ------------------------------------------------------------------------


def _row(device: Device) -> ColumnElement[bool]:
    """The tally row of ``device``: by its nonce's hash, within its tenant."""
    return and_(
        DeviceFailures.nonce_hash == sha256_hex(device.nonce),
        DeviceFailures.tenant_id == device.tenant_id,
    )


async def device_locked_until(session: AsyncSession, device: Device) -> dt.datetime | None:
    stmt = select(DeviceFailures.locked_until).where(_row(device))
    return (await session.execute(stmt)).scalar_one_or_none()


def _later(column: Mapped[dt.datetime | None], until: dt.datetime) -> ColumnElement[dt.datetime]:
    """``until``, unless ``column`` already locks for longer: of two failures counted at once,
    the one that counted more decides the lock, whichever writes last."""
    return case((or_(column.is_(None), column < until), until), else_=column)


def _raised(
    failures: Mapped[int], last: Mapped[dt.datetime | None] | Mapped[dt.datetime], now: dt.datetime
) -> ColumnElement[int]:
    """One more than ``failures``, or one when the last failure is ``FORGET_AFTER`` old."""
    return case((last < now - FORGET_AFTER, 1), else_=failures + 1)


async def count_user_failure(
    session: AsyncSession,
    user: User,
    *,
    now: dt.datetime,
    max_failures: int,
    lockout_seconds: int,
) -> None:
    """One more wrong password for ``user``, raised in the database rather than read and written
    back: wrong passwords sent at once all count, on either database (PostgreSQL's read
    committed would otherwise keep one of them). Past ``max_failures`` the user is locked."""
    stmt = (
        update(User)
        .where(User.id == user.id)
        .values(
            failed_logins=_raised(User.failed_logins, User.failed_login_at, now),
            failed_login_at=now,
        )
        .returning(User.failed_logins)
        .execution_options(synchronize_session=False)
    )
    failures = (await session.execute(stmt)).scalar_one()
    set_committed_value(user, "failed_logins", failures)
    set_committed_value(user, "failed_login_at", now)
    seconds = lock_seconds(failures, max_failures=max_failures, lockout_seconds=lockout_seconds)
    if seconds is not None:
        lock = (
            update(User)
            .where(User.id == user.id)
            .values(locked_until=_later(User.locked_until, now + dt.timedelta(seconds=seconds)))
            .returning(User.locked_until)
            .execution_options(synchronize_session=False)
        )
        set_committed_value(user, "locked_until", (await session.execute(lock)).scalar_one())


def _insert(
    session: AsyncSession, table: type[DeviceFailures] | type[UnknownUserFailures]
) -> postgresql.Insert | sqlite.Insert:
    """An ``INSERT`` that can take ``ON CONFLICT DO UPDATE``, in the session's dialect."""
    if session.get_bind().dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


async def count_device_failure(
    session: AsyncSession,
    device: Device,
    *,
    now: dt.datetime,
    max_failures: int,
    lockout_seconds: int,
) -> None:
    """One more wrong password in the device's browser, counted in one statement (two attempts
    at once both count, on either database); past ``max_failures`` the device is locked."""
    stmt = (
        _insert(session, DeviceFailures)
        .values(
            nonce_hash=sha256_hex(device.nonce),
            tenant_id=device.tenant_id,
            user_id=device.user_id,
            failures=1,
            expires_at=dt.datetime.fromtimestamp(device.expires, dt.UTC),
        )
        .on_conflict_do_update(
            index_elements=[DeviceFailures.nonce_hash],
            set_={"failures": DeviceFailures.failures + 1},
        )
        .returning(DeviceFailures.failures)
    )
    failures = (await session.execute(stmt)).scalar_one()
    seconds = lock_seconds(failures, max_failures=max_failures, lockout_seconds=lockout_seconds)
    if seconds is not None:
        await session.execute(
            update(DeviceFailures)
            .where(_row(device))
            .values(
                locked_until=_later(
                    DeviceFailures.locked_until, now + dt.timedelta(seconds=seconds)
                )
            )
        )


async def locked_devices(
    session: AsyncSession, *, tenant_id: int, now: dt.datetime
) -> dict[int, int]:
    """How many browsers of each user of the tenant are locked out now, by user id (users with
    none are left out): what an unlock would lift besides the user's own lockout."""
    stmt = (
        select(DeviceFailures.user_id, func.count())
        .where(DeviceFailures.tenant_id == tenant_id, DeviceFailures.locked_until > now)
        .group_by(DeviceFailures.user_id)
    )
    return dict((await session.execute(stmt)).all())


async def forget_device(session: AsyncSession, device: Device) -> None:
    """A success in the device's browser: its tally goes."""
    await session.execute(delete(DeviceFailures).where(_row(device)))


async def forget_devices(session: AsyncSession, user: User) -> None:
    """The tallies of every browser of ``user`` go (an unlock, a new password)."""
    await session.execute(
        delete(DeviceFailures).where(
            DeviceFailures.tenant_id == user.tenant_id, DeviceFailures.user_id == user.id
        )
    )


# Usernames no user has ---------------------------------------------------------------------


class UnknownNames:
    """Names the tally of a username no user of the tenant has: HMAC-SHA256 of the tenant and
    the name, under a key of its own derived from ``SWITCHBOARD_SECRET_KEY``. The table holds
    neither the names tried (people type passwords into the username field) nor a plain digest
    anyone holding the database could test guesses against."""

    def __init__(self, master_secret: str) -> None:
        self._key = derive_key(master_secret, "idp-unknown-user-failures")

    def digest(self, tenant_id: int, username: str) -> str:
        message = f"{tenant_id}\n{username}".encode("utf-8", "surrogatepass")
        return hmac_sha256_hex(self._key, message)


@lru_cache(maxsize=4)
def unknown_names(master_secret: str) -> UnknownNames:
    return UnknownNames(master_secret)


def _unknown_row(tenant_id: int, name_hash: str) -> ColumnElement[bool]:
    return and_(
        UnknownUserFailures.name_hash == name_hash, UnknownUserFailures.tenant_id == tenant_id
    )


async def unknown_locked_until(
    session: AsyncSession, *, tenant_id: int, name_hash: str
) -> dt.datetime | None:
    stmt = select(UnknownUserFailures.locked_until).where(_unknown_row(tenant_id, name_hash))
    return (await session.execute(stmt)).scalar_one_or_none()


async def count_unknown_failure(
    session: AsyncSession,
    *,
    tenant_id: int,
    name_hash: str,
    now: dt.datetime,
    max_failures: int,
    lockout_seconds: int,
) -> None:
    """One more wrong password for a username no user has, by the rule of ``count_user_failure``
    (the same doubling, the same forgetting), in one statement: attempts at once all count."""
    row = UnknownUserFailures
    stmt = (
        _insert(session, row)
        .values(name_hash=name_hash, tenant_id=tenant_id, failures=1, failed_at=now)
        .on_conflict_do_update(
            index_elements=[row.name_hash],
            set_={"failures": _raised(row.failures, row.failed_at, now), "failed_at": now},
        )
        .returning(row.failures)
    )
    failures = (await session.execute(stmt)).scalar_one()
    seconds = lock_seconds(failures, max_failures=max_failures, lockout_seconds=lockout_seconds)
    if seconds is not None:
        until = now + dt.timedelta(seconds=seconds)
        await session.execute(
            update(row)
            .where(_unknown_row(tenant_id, name_hash))
            .values(locked_until=_later(row.locked_until, until))
        )
