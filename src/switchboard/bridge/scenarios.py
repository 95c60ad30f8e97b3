"""What the simulated callee does, chosen by the dialled number's last two digits.

Pure functions: a scenario becomes a script of steps on a virtual timeline (seconds after the
INVITE, at real-world pacing); the simulator plays it back scaled by ``SWITCHBOARD_SIM_SPEED``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

RING_SEC = 4.0
NO_ANSWER_RING_SEC = 30.0
VOICEMAIL_PICKUP_SEC = 12.0
AI_CONNECT_SEC = 0.8
AI_TURN_SEC = 4.5
CALLER_TURN_SEC = 3.0
TRUNK_REJECT_SEC = 0.3
TRANSFER_TARGET = "reception"


class Scenario(Enum):
    FINISHED = "00"
    NO_ANSWER = "01"
    VOICEMAIL = "02"
    FAR_HANGUP = "03"
    NOT_NOW = "04"
    TRUNK_REJECTS = "05"
    MAX_DURATION = "06"
    TRANSFER = "07"


SCENARIO_TABLE: tuple[tuple[str, str, str], ...] = (
    ("00 (and any other ending)", "answers, converses, the AI finishes", "finished"),
    ("01", "rings out", "no-answer"),
    ("02", "voicemail picks up", "voicemail"),
    ("03", "hangs up mid-conversation", "far-hangup"),
    ("04", "asks to be called later", "not-now"),
    ("05", "the trunk rejects the call (technical failure, `errorDetail` filled)", "—"),
    ("06", "keeps talking until `maxSeconds`", "max-duration"),
    ("07", "asks for a person; the AI transfers the call", "transferred-to-vnum"),
)


def scenario_for(number: str) -> Scenario:
    digits = re.sub(r"\D", "", number)
    ending = digits[-2:]
    for scenario in Scenario:
        if scenario.value == ending:
            return scenario
    return Scenario.FINISHED


StepKind = Literal["answered", "ai-started", "turn", "transferred", "ended"]


@dataclass(frozen=True, slots=True)
class Step:
    at: float
    kind: StepKind
    speaker: Literal["AI", "Caller"] = "AI"
    text: str = ""
    outcome: str = ""
    error_detail: str = ""
    trunk_id: str = ""


@dataclass(slots=True)
class Script:
    steps: list[Step] = field(default_factory=list)
    answered_at: float | None = None

    def add(self, step: Step) -> None:
        self.steps.append(step)
        if step.kind == "answered":
            self.answered_at = step.at


_CALLER_LINES = (
    "Hi, yes, speaking.",
    "Okay, I'm listening.",
    "Could you tell me a bit more about that?",
    "That sounds fine to me.",
    "What would I need to do next?",
    "Alright, that makes sense.",
    "Sure, go ahead.",
)


def _sentences(prompt: str) -> list[str]:
    parts = [p.strip() for p in re.split(r"(?<=[.!?])\s+|\n+", prompt) if p.strip()]
    cleaned = []
    for part in parts:
        text = part.rstrip(".!? ")
        if len(text) > 160:
            text = text[:157].rstrip() + "..."
        if text:
            cleaned.append(text)
    return cleaned or ["I'm calling with a short message for you"]


class Lines:
    """Plausible turns derived from the system prompt."""

    def __init__(self, prompt: str, display_name: str) -> None:
        self._sentences = _sentences(prompt)
        self._display_name = display_name
        self._ai = 0
        self._caller = 0

    def opening(self) -> str:
        topic = self._sentences[0]
        return f"Hello, this is the assistant calling for {self._display_name}. {topic}."

    def ai(self) -> str:
        self._ai += 1
        rest = self._sentences[1:]
        if rest:
            return f"Just so you know: {rest[(self._ai - 1) % len(rest)]}."
        return "Is there anything else you would like to know about it?"

    def caller(self) -> str:
        line = _CALLER_LINES[self._caller % len(_CALLER_LINES)]
        self._caller += 1
        return line

    @staticmethod
    def goodbye() -> str:
        return "Thank you for your time. Goodbye!"


def outbound_script(
    *, number: str, trunk_ids: list[str], prompt: str, display_name: str, max_seconds: int
) -> Script:
    scenario = scenario_for(number)
    script = Script()
    trunk = trunk_ids[0] if trunk_ids else ""
    if scenario is Scenario.TRUNK_REJECTS:
        tried = ", ".join(f"{t}: 503 Service Unavailable" for t in trunk_ids) or "no trunk"
        script.add(
            Step(
                at=TRUNK_REJECT_SEC * max(1, len(trunk_ids)),
                kind="ended",
                error_detail=f"every trunk rejected the INVITE ({tried})",
            )
        )
        return script
    if scenario is Scenario.NO_ANSWER:
        script.add(Step(at=NO_ANSWER_RING_SEC, kind="ended", outcome="no-answer"))
        return script

    lines = Lines(prompt, display_name)
    ring = VOICEMAIL_PICKUP_SEC if scenario is Scenario.VOICEMAIL else RING_SEC
    script.add(Step(at=ring, kind="answered", trunk_id=trunk))
    t = ring + AI_CONNECT_SEC
    script.add(Step(at=t, kind="ai-started"))

    def turn(speaker: Literal["AI", "Caller"], text: str) -> None:
        nonlocal t
        t += AI_TURN_SEC if speaker == "AI" else CALLER_TURN_SEC
        script.add(Step(at=t, kind="turn", speaker=speaker, text=text))

    def end(outcome: str) -> None:
        script.add(Step(at=t + 0.5, kind="ended", outcome=outcome))

    if scenario is Scenario.VOICEMAIL:
        turn(
            "Caller",
            "Hi, you've reached my voicemail. Please leave a message after the tone.",
        )
        end("voicemail")
    elif scenario is Scenario.FAR_HANGUP:
        turn("AI", lines.opening())
        turn("Caller", lines.caller())
        turn("AI", lines.ai())
        turn("Caller", "Sorry, I have to go.")
        end("far-hangup")
    elif scenario is Scenario.NOT_NOW:
        turn("AI", lines.opening())
        turn("Caller", "This isn't a good time. Could you call me back later?")
        turn("AI", "Of course, we will call you another time. Goodbye!")
        end("not-now")
    elif scenario is Scenario.MAX_DURATION:
        limit = ring + max_seconds
        turn("AI", lines.opening())
        while True:
            turn("Caller", lines.caller())
            if t >= limit:
                break
            turn("AI", lines.ai())
            if t >= limit:
                break
        t = limit
        script.add(Step(at=limit, kind="ended", outcome="max-duration"))
    elif scenario is Scenario.TRANSFER:
        turn("AI", lines.opening())
        turn("Caller", "Can I speak to a real person, please?")
        turn("AI", "Certainly, I'm transferring you to a colleague now.")
        script.add(Step(at=t + 0.2, kind="transferred", trunk_id=trunk))
        end("transferred-to-vnum")
    else:
        turn("AI", lines.opening())
        for _ in range(3):
            turn("Caller", lines.caller())
            turn("AI", lines.ai())
        turn("Caller", "Thanks, bye.")
        turn("AI", lines.goodbye())
        end("finished")
    return script


def inbound_script(
    *, prompt: str, display_name: str, sip: bool, outcome: str, max_seconds: int = 0
) -> Script:
    """An inbound conversation: the caller speaks to a virtual number or a receptionist; with
    ``max_seconds``, cut there (``max-duration``) when it would run longer."""
    lines = Lines(prompt, display_name)
    script = Script()
    t = 0.6
    if sip:
        script.add(Step(at=t, kind="answered"))
    t += AI_CONNECT_SEC
    script.add(Step(at=t, kind="ai-started"))

    def turn(speaker: Literal["AI", "Caller"], text: str) -> None:
        nonlocal t
        t += AI_TURN_SEC if speaker == "AI" else CALLER_TURN_SEC
        script.add(Step(at=t, kind="turn", speaker=speaker, text=text))

    turn("AI", f"Hello, you've reached {display_name}. How can I help you today?")
    turn("Caller", "Hi, I have a quick question.")
    turn("AI", lines.ai())
    if outcome == "transferred-to-vnum":
        turn("Caller", "Can I speak to someone in person?")
        turn("AI", "Of course, I'm putting you through now.")
        script.add(Step(at=t + 0.2, kind="transferred"))
    else:
        turn("Caller", "Great, thanks a lot.")
        turn("AI", lines.goodbye())
    script.add(Step(at=t + 0.5, kind="ended", outcome=outcome))
    if max_seconds and t + 0.5 > max_seconds:
        script.steps = [step for step in script.steps if step.at < max_seconds]
        script.add(Step(at=max_seconds, kind="ended", outcome="max-duration"))
    return script
