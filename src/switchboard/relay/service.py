"""The operator ACL: validated writes, and the snapshot the guard enforces."""

from __future__ import annotations

import ipaddress
from typing import cast

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import Clock
from switchboard.relay import repository
from switchboard.relay.acl import SCOPES, SUBJECTS, Acl, Rule, Scope, Subject, normalize
from switchboard.relay.addresses import wholly_exempt
from switchboard.relay.models import RelayAclRule

NOTE_MAX = 200


class AclError(ValueError):
    """A rule the ACL refuses (bad subject, scope or value, duplicate, unknown id)."""


async def add_rule(
    session: AsyncSession, *, subject: str, value: str, scope: str, note: str, clock: Clock
) -> RelayAclRule:
    if subject not in SUBJECTS:
        raise AclError(f"subject must be one of {', '.join(SUBJECTS)}")
    if scope not in SCOPES:
        raise AclError(f"scope must be one of {', '.join(SCOPES)}")
    try:
        canonical = normalize(subject, value)
    except ValueError as exc:
        raise AclError(f"invalid {subject} {value!r}: {exc}") from None
    if wholly_exempt(ipaddress.ip_network(canonical)):
        raise AclError(
            f"{canonical} is never blocked: private, loopback and link-local addresses are "
            "always allowed (spec 8.2.3)"
        )
    if await repository.find(session, subject, canonical, scope) is not None:
        raise AclError(f"{subject} {canonical} is already blocked for scope {scope}")
    rule = RelayAclRule(
        subject=subject, value=canonical, scope=scope, note=note[:NOTE_MAX],
        created_at=clock.now(),
    )  # fmt: skip
    return await repository.add(session, rule)


async def remove_rule(session: AsyncSession, *, rule_id: int) -> None:
    if not await repository.remove(session, rule_id):
        raise AclError(f"no ACL rule with id {rule_id}")


async def list_rules(session: AsyncSession) -> list[RelayAclRule]:
    return list(await repository.list_rules(session))


async def load_acl(session: AsyncSession) -> Acl:
    """The current rules as the immutable snapshot the guard and the packet filter enforce."""
    rows = await repository.list_rules(session)
    return Acl(
        Rule(subject=cast(Subject, row.subject), value=row.value, scope=cast(Scope, row.scope))
        for row in rows
        if row.subject in SUBJECTS and row.scope in SCOPES
    )
