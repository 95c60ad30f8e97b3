"""Turns reported by the bridge, as the transcripts feature stores them."""

from __future__ import annotations

from switchboard.bridge.protocol import EndedFields
from switchboard.kit.clock import parse_iso_utc
from switchboard.platform.transcripts.service import Turn


def turns_of(ended: EndedFields) -> list[Turn]:
    """The reported turns, skipping any whose timestamp cannot be read."""
    turns = []
    for turn in ended.turns:
        try:
            ts = parse_iso_utc(turn.ts)
        except ValueError:
            continue
        turns.append(Turn(speaker=turn.speaker, text=turn.text, ts=ts))
    return turns
