"""Pure rules: the scenario table, the scripts, the status machine, signatures."""

from __future__ import annotations

import itertools

import pytest

from switchboard.bridge import protocol
from switchboard.bridge.scenarios import Scenario, outbound_script, scenario_for
from switchboard.platform.calls.service import status_after_attempt


@pytest.mark.parametrize(
    ("number", "scenario"),
    [
        ("+14155550100", Scenario.FINISHED),
        ("+14155550101", Scenario.NO_ANSWER),
        ("+14155550105", Scenario.TRUNK_REJECTS),
        ("+14155550107", Scenario.TRANSFER),
        ("+14155550199", Scenario.FINISHED),
        ("+14155550170", Scenario.FINISHED),
    ],
)
def test_scenario_by_last_two_digits(number: str, scenario: Scenario) -> None:
    assert scenario_for(number) is scenario


def test_finished_script_alternates_and_ends_last() -> None:
    script = outbound_script(
        number="+14155550100", trunk_ids=["a"], prompt="Remind them of the bill. Be brief.",
        display_name="Acme", max_seconds=300,
    )  # fmt: skip
    kinds = [s.kind for s in script.steps]
    assert kinds[:2] == ["answered", "ai-started"]
    assert kinds[-1] == "ended"
    speakers = [s.speaker for s in script.steps if s.kind == "turn"]
    assert speakers[0] == "AI"
    assert all(a != b for a, b in itertools.pairwise(speakers))
    assert "Remind them of the bill" in script.steps[2].text
    times = [s.at for s in script.steps]
    assert times == sorted(times)


def test_max_duration_script_talks_exactly_max_seconds() -> None:
    script = outbound_script(
        number="+14155550106", trunk_ids=["a"], prompt="Chat.", display_name="A", max_seconds=45
    )
    assert script.answered_at is not None
    end = script.steps[-1]
    assert (end.kind, end.outcome) == ("ended", "max-duration")
    assert end.at - script.answered_at == 45


def test_trunk_rejection_names_every_trunk() -> None:
    script = outbound_script(
        number="+14155550105", trunk_ids=["a", "b"], prompt="x", display_name="A", max_seconds=60
    )
    (end,) = script.steps
    assert end.outcome == ""
    assert "a: 503" in end.error_detail
    assert "b: 503" in end.error_detail


@pytest.mark.parametrize(
    ("outcome", "error", "answered", "retries", "status"),
    [
        ("finished", "", True, 0, "ended-success"),
        ("transferred-to-vnum", "", True, 2, "ended-success"),
        ("max-duration", "", True, 0, "ended-success"),
        ("", "watchdog", True, 3, "ended-failed-final"),
        ("no-answer", "", False, 1, "ended-failed-retry-pending"),
        ("no-answer", "", False, 0, "ended-failed-final"),
        ("", "trunk rejected", False, 1, "ended-failed-retry-pending"),
        ("", "trunk rejected", False, 0, "ended-failed-final"),
        ("", "lost", True, 5, "ended-failed-final"),
        ("not-now", "", True, 5, "ended-failed-final"),
        ("voicemail", "", True, 5, "ended-failed-final"),
        ("far-hangup", "", True, 5, "ended-failed-final"),
    ],
)
def test_status_after_attempt(
    outcome: str, error: str, answered: bool, retries: int, status: str
) -> None:
    assert (
        status_after_attempt(
            outcome=outcome, error_detail=error, answered=answered, retries_left=retries
        )
        == status
    )


def test_signatures() -> None:
    signature = protocol.sign("k", b"{}")
    assert signature.startswith("sha256=")
    assert protocol.verify("k", b"{}", signature)
    assert not protocol.verify("k", b"{ }", signature)
    assert not protocol.verify("other", b"{}", signature)
    assert not protocol.verify("k", b"{}", None)
    assert protocol.derive_secret("", "a") != protocol.derive_secret("", "b")
    assert protocol.derive_secret("explicit", "a") == "explicit"
