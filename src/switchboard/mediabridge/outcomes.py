"""What the SIP result of one trunk means for the call (docs/bridge.md, the outcome table)."""

from __future__ import annotations

from dataclasses import dataclass

from switchboard.mediabridge.sip.uac import InviteResult

NO_ANSWER = {408, 480, 487, 486, 600}
DOES_NOT_EXIST = {404, 484, 604}


@dataclass(frozen=True)
class Verdict:
    """``final`` ends the call with ``outcome`` (or, when empty, the technical failure
    ``error_detail``); otherwise the next trunk is tried."""

    final: bool
    outcome: str = ""
    error_detail: str = ""


def describe(result: InviteResult) -> str:
    if result.status == 0:
        return result.reason or "no answer to the INVITE (timer B)"
    return f"SIP {result.status} {result.reason}".rstrip()


def verdict(trunk_id: str, result: InviteResult) -> Verdict:
    status = result.status
    if result.cancelled:
        return Verdict(final=True, outcome="cancelled")
    if result.rang_out or status in NO_ANSWER:
        return Verdict(final=True, outcome="no-answer")
    if status == 603:
        return Verdict(final=True, outcome="not-now")
    if status in DOES_NOT_EXIST:
        detail = f"the number does not exist ({describe(result)} from trunk {trunk_id})"
        return Verdict(final=True, error_detail=detail)
    return Verdict(final=False)
