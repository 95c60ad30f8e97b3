"""The pure matchers: the indexed lookup agrees with a plain linear scan (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.platform.routing.matching import (
    InboundIndex,
    InboundRule,
    OutboundIndex,
    OutboundRule,
    first_inbound_linear,
    first_outbound_linear,
)

# A tiny alphabet makes prefixes, 00/+ forms and inner stars collide often.
text = st.text(alphabet="01+*", min_size=0, max_size=6)
pattern = st.one_of(st.sampled_from(["*", "+*", "00*", "anonymous", "global"]), text)
caller = st.one_of(st.none(), st.sampled_from(["", "anonymous", "Anonymous", " "]), text)

inbound_rules = st.lists(
    st.builds(
        InboundRule,
        did=pattern.filter(bool),
        from_number=st.one_of(st.just(""), pattern),
        user=st.text(alphabet="abc", min_size=1, max_size=2),
    ),
    max_size=25,
)
outbound_rules = st.lists(
    st.builds(
        OutboundRule,
        match=pattern.filter(bool),
        trunk_ids=st.tuples(st.text(alphabet="xyz", min_size=1, max_size=2)),
    ),
    max_size=25,
)


@settings(max_examples=250, deadline=None)
@given(rules=inbound_rules, did=text, from_number=caller)
def test_inbound_index_agrees_with_a_linear_scan(
    rules: list[InboundRule], did: str, from_number: str | None
) -> None:
    assert InboundIndex(rules).first(did, from_number) == first_inbound_linear(
        rules, did, from_number
    )


@settings(max_examples=250, deadline=None)
@given(rules=outbound_rules, number=text)
def test_outbound_index_agrees_with_a_linear_scan(rules: list[OutboundRule], number: str) -> None:
    assert OutboundIndex(rules).first(number) == first_outbound_linear(rules, number)


def _out(*matches: str) -> OutboundIndex:
    return OutboundIndex([OutboundRule(m, (m,)) for m in matches])


def test_outbound_patterns() -> None:
    index = _out("+4930*", "+49*", "0*", "112", "*98")
    assert index.resolve("004930123", "d") == ["+4930*"]  # 00 is the + form
    assert index.resolve("+49891", "d") == ["+49*"]
    assert index.resolve("030123", "d") == ["0*"]  # national, not international
    assert index.resolve("0049891", "d") == ["+49*"]
    assert index.resolve("112", "d") == ["112"]
    assert index.resolve("1120", "d") == ["d"]  # no star: exact
    assert index.resolve("*98", "d") == ["*98"]  # a leading star is literal
    assert index.resolve("+1555", "d") == ["d"]
    assert _out("+1*", "global", "+49*").resolve("+4930", "d") == ["global"]
    assert _out("*").resolve("anything", "d") == ["*"]
    assert _out("+49*", "+49*").first("+49") == 0


def test_inbound_patterns() -> None:
    rules = [
        InboundRule("100", "+1*", "americas"),
        InboundRule("100", "", "desk"),
        InboundRule("anonymous", "", "screen"),
        InboundRule("+4930*", "anonymous", "anon-berlin"),
        InboundRule("+4930*", "0044*", "uk-berlin"),
        InboundRule("*", "", "catchall"),
    ]
    index = InboundIndex(rules)

    def user(did: str, caller: str | None) -> str | None:
        rule = index.resolve(did, caller)
        return rule.user if rule else None

    assert user("100", "+1555") == "americas"
    assert user("100", "001555") == "americas"
    assert user("100", None) == "desk"
    assert user("200", None) == "screen"
    assert user("200", "") == "screen"
    assert user("200", "Anonymous") == "screen"  # SIP's From display for withheld numbers
    assert user("+493012", "+4420") == "uk-berlin"
    assert user("00493012", "004420") == "uk-berlin"
    assert user("+493012", "+33") == "catchall"
    assert InboundIndex(rules[3:]).resolve("+493012", None) == rules[3]
    assert InboundIndex([]).resolve("1", None) is None
