"""Pure matchers for the routing tables: first match wins, indexed by literal prefix.

A pattern is a literal, or a literal followed by one trailing ``*`` (a prefix). ``*`` alone
matches everything; the outbound literal ``global`` does too. Any other ``*`` is literal, so
star codes such as ``*98`` stay exact. Numbers in the E.164 ``+`` and ``00`` forms are the same
number: both sides are compared in their ``+`` form.

Resolution never scans the table. Each pattern is keyed by its canonical literal in a dict of
exact patterns or a dict of prefixes, valued by the smallest row index holding it; a lookup
probes the number's own prefixes (at most ``len(number) + 1`` probes) and keeps the smallest
index found, which is exactly the first row a linear scan would stop at.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

WILDCARD = "*"
GLOBAL = "global"
ANONYMOUS = "anonymous"


def canonical_number(value: str) -> str:
    """The ``+`` form of an E.164 number written with ``00``; any other string unchanged."""
    if value.startswith("00"):
        return "+" + value[2:]
    return value


def split_pattern(text: str, *, global_matches_all: bool = False) -> tuple[str, bool]:
    """(canonical literal, is a prefix) of a pattern."""
    if global_matches_all and text == GLOBAL:
        return "", True
    if text.endswith(WILDCARD):
        return canonical_number(text[:-1]), True
    return canonical_number(text), False


@dataclass(frozen=True, slots=True)
class Pattern:
    """A compiled pattern: its canonical literal, and whether it is a prefix."""

    text: str
    literal: str
    prefix: bool

    @classmethod
    def compile(cls, text: str, *, global_matches_all: bool = False) -> Pattern:
        literal, prefix = split_pattern(text, global_matches_all=global_matches_all)
        return cls(text=text, literal=literal, prefix=prefix)

    def matches(self, value: str) -> bool:
        value = canonical_number(value)
        return value.startswith(self.literal) if self.prefix else value == self.literal

    def explain(self) -> str:
        if self.prefix and not self.literal:
            return "matches every value"
        if self.prefix:
            return f"prefix {self.literal!r}"
        return f"exact {self.literal!r}"


@dataclass(slots=True)
class _Keyed:
    """Smallest index per exact literal and per prefix literal."""

    exact: dict[str, int] = field(default_factory=dict)
    prefixes: dict[str, int] = field(default_factory=dict)

    def add(self, literal: str, prefix: bool, index: int) -> None:
        target = self.prefixes if prefix else self.exact
        target.setdefault(literal, index)

    def first(self, value: str) -> int | None:
        value = canonical_number(value)
        best = self.exact.get(value)
        if self.prefixes:
            for end in range(len(value) + 1):
                hit = self.prefixes.get(value[:end])
                if hit is not None and (best is None or hit < best):
                    best = hit
        return best


# Outbound ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OutboundRule:
    match: str
    trunk_ids: tuple[str, ...]


def outbound_pattern(match: str) -> Pattern:
    return Pattern.compile(match, global_matches_all=True)


def outbound_matches(rule: OutboundRule, number: str) -> bool:
    """The plain definition of a match, used by the linear scan and to explain a hit."""
    return outbound_pattern(rule.match).matches(number)


def first_outbound_linear(rules: Sequence[OutboundRule], number: str) -> int | None:
    """Reference semantics: the index of the first matching rule, by a full scan."""
    for index, rule in enumerate(rules):
        if outbound_matches(rule, number):
            return index
    return None


class OutboundIndex:
    """The outbound table compiled for lookups whose cost does not grow with the table."""

    def __init__(self, rules: Sequence[OutboundRule]) -> None:
        self.rules: tuple[OutboundRule, ...] = tuple(rules)
        self._keyed = _Keyed()
        for index, rule in enumerate(self.rules):
            literal, prefix = split_pattern(rule.match, global_matches_all=True)
            self._keyed.add(literal, prefix, index)

    def first(self, number: str) -> int | None:
        return self._keyed.first(number)

    def resolve(self, number: str, default_trunk_id: str) -> list[str]:
        index = self.first(number)
        if index is None:
            return [default_trunk_id]
        return list(self.rules[index].trunk_ids)


# Inbound -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InboundRule:
    did: str
    from_number: str  # "" when the row does not filter the calling party
    user: str


def caller_value(from_number: str | None) -> str:
    """The calling party as patterns see it: no caller ID (``None``, empty, or SIP's
    ``Anonymous`` in any case) is ``anonymous``."""
    value = (from_number or "").strip()
    return ANONYMOUS if not value or value.lower() == ANONYMOUS else value


def is_anonymous_did(did: str) -> bool:
    return did.lower() == ANONYMOUS


def _from_matches(pattern: str, caller: str) -> bool:
    if not pattern:
        return True
    if is_anonymous_did(pattern):
        return caller == ANONYMOUS
    return Pattern.compile(pattern).matches(caller)


def inbound_matches(rule: InboundRule, did: str, from_number: str | None) -> bool:
    """The plain definition of a match, used by the linear scan and to explain a hit.

    ``Did`` is a pattern on the dialled number, except the literal ``anonymous``, which matches
    every call that arrives without caller ID. ``FromNumber``, when set, is a pattern on the
    calling party (``anonymous`` when there is no caller ID).
    """
    caller = caller_value(from_number)
    if is_anonymous_did(rule.did):
        did_ok = caller == ANONYMOUS
    else:
        did_ok = Pattern.compile(rule.did).matches(did)
    return did_ok and _from_matches(rule.from_number, caller)


def first_inbound_linear(
    rules: Sequence[InboundRule], did: str, from_number: str | None
) -> int | None:
    """Reference semantics: the index of the first matching rule, by a full scan."""
    for index, rule in enumerate(rules):
        if inbound_matches(rule, did, from_number):
            return index
    return None


class _FromIndex:
    """The rows sharing one Did pattern, keyed by their FromNumber pattern."""

    __slots__ = ("anonymous", "keyed", "unfiltered")

    def __init__(self) -> None:
        self.unfiltered: int | None = None
        self.anonymous: int | None = None
        self.keyed: _Keyed | None = None  # built on the first FromNumber pattern

    def add(self, from_number: str, index: int) -> None:
        if not from_number:
            if self.unfiltered is None:
                self.unfiltered = index
        elif is_anonymous_did(from_number):
            if self.anonymous is None:
                self.anonymous = index
        else:
            if self.keyed is None:
                self.keyed = _Keyed()
            self.keyed.add(*split_pattern(from_number), index)

    def first(self, caller: str) -> int | None:
        best = self.unfiltered
        for hit in (
            self.keyed.first(caller) if self.keyed is not None else None,
            self.anonymous if caller == ANONYMOUS else None,
        ):
            if hit is not None and (best is None or hit < best):
                best = hit
        return best


class InboundIndex:
    """The inbound table compiled: Did patterns by literal prefix, then FromNumber patterns."""

    def __init__(self, rules: Sequence[InboundRule]) -> None:
        self.rules: tuple[InboundRule, ...] = tuple(rules)
        self._exact: dict[str, _FromIndex] = {}
        self._prefixes: dict[str, _FromIndex] = {}
        self._anonymous = _FromIndex()
        for index, rule in enumerate(self.rules):
            if is_anonymous_did(rule.did):
                bucket = self._anonymous
            else:
                literal, prefix = split_pattern(rule.did)
                table = self._prefixes if prefix else self._exact
                found = table.get(literal)
                if found is None:
                    found = table[literal] = _FromIndex()
                bucket = found
            bucket.add(rule.from_number, index)

    def first(self, did: str, from_number: str | None) -> int | None:
        caller = caller_value(from_number)
        value = canonical_number(did)
        buckets: list[_FromIndex] = []
        exact = self._exact.get(value)
        if exact is not None:
            buckets.append(exact)
        if self._prefixes:
            for end in range(len(value) + 1):
                bucket = self._prefixes.get(value[:end])
                if bucket is not None:
                    buckets.append(bucket)
        if caller == ANONYMOUS:
            buckets.append(self._anonymous)
        hits = [hit for bucket in buckets if (hit := bucket.first(caller)) is not None]
        return min(hits) if hits else None

    def resolve(self, did: str, from_number: str | None) -> InboundRule | None:
        index = self.first(did, from_number)
        return None if index is None else self.rules[index]
