"""All SQL of the relay: the operator ACL rules."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.relay.models import RelayAclRule


async def list_rules(session: AsyncSession) -> Sequence[RelayAclRule]:
    result = await session.scalars(select(RelayAclRule).order_by(RelayAclRule.id))
    return result.all()


async def find(session: AsyncSession, subject: str, value: str, scope: str) -> RelayAclRule | None:
    statement = select(RelayAclRule).where(
        RelayAclRule.subject == subject, RelayAclRule.value == value, RelayAclRule.scope == scope
    )
    return (await session.scalars(statement)).one_or_none()


async def add(session: AsyncSession, rule: RelayAclRule) -> RelayAclRule:
    session.add(rule)
    await session.flush()
    return rule


async def remove(session: AsyncSession, rule_id: int) -> bool:
    result = await session.execute(delete(RelayAclRule).where(RelayAclRule.id == rule_id))
    return bool(getattr(result, "rowcount", 0))
