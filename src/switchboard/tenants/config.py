"""Typed view of a tenant's settings, including the ``Phone:Sfu:*`` tunables (spec 8.1).

Settings are stored as a flat map of keys (``Phone:Sfu:AutoPromoteHumanCount``,
``DefaultVoice``, ...). Out-of-range tunables snap silently to the nearest bound.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

VOICES = (
    "Achird", "Aoede", "Autonoe", "Charon", "Erinome", "Fenrir", "Kore",
    "Laomedeia", "Orus", "Puck", "Sadachbia", "Schedar", "Umbriel", "Zephyr",
)  # fmt: skip

SFU_PREFIX = "Phone:Sfu:"
# ``Prompts:<slug>``: a known prompt; a call whose systemPrompt is the slug gets its text
PROMPT_PREFIX = "Prompts:"
SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


@dataclass(frozen=True, slots=True)
class Tunable:
    default: float
    low: float
    high: float
    integer: bool

    def snap(self, raw: Any) -> float:
        try:
            value = float(raw)
        except (TypeError, ValueError):
            return self.default
        if value != value:  # NaN
            return self.default
        value = min(max(value, self.low), self.high)
        return float(round(value)) if self.integer else value


SFU_TUNABLES: dict[str, Tunable] = {
    "AutoPromoteHumanCount": Tunable(6, 2, 100, True),
    "AutoPromoteBwMinHumans": Tunable(3, 2, 100, True),
    "StressWindowSec": Tunable(30, 5, 600, True),
    "MinStressedPeers": Tunable(2, 2, 100, True),
    "BwDegradedSuppressSec": Tunable(300, 30, 86400, True),
    "StressBwMbpsThreshold": Tunable(1.5, 0.1, 1000.0, False),
    "StressLossPctThreshold": Tunable(5.0, 0.1, 50.0, False),
    "StressRttMsThreshold": Tunable(300, 50, 10000, True),
}

STRING_SETTINGS: dict[str, str] = {
    "DefaultModel": "gemini-live-2.5-flash",
    "DefaultVoice": "Aoede",
    "DefaultLanguage": "en-US",
    "DefaultTrunkId": "default",
    "ExternalOidc:Issuer": "",
    "ExternalOidc:JwksUrl": "",
    "ExternalOidc:TenantClaim": "",
    "ExternalOidc:RoleClaim": "role",
    # The outcome email after every call attempt: "false" turns it off for the tenant; the
    # sender name is the display name of its From address (default: the tenant's name).
    "OutcomeEmail:Enabled": "true",
    "OutcomeEmail:SenderName": "",
    # What the AI says when a voicemail greeting answers an outbound call; empty: it hangs up
    # without a message (spec 6.3 ``voicemail``).
    "Voicemail:Message": "",
}


def known_key(key: str) -> bool:
    if key in STRING_SETTINGS:
        return True
    if key.startswith(PROMPT_PREFIX):
        return SLUG.fullmatch(key[len(PROMPT_PREFIX) :]) is not None
    return key.startswith(SFU_PREFIX) and key[len(SFU_PREFIX) :] in SFU_TUNABLES


@dataclass(frozen=True, slots=True)
class ExternalIssuer:
    issuer: str
    jwks_url: str
    tenant_claim: str
    role_claim: str


@dataclass(frozen=True, slots=True)
class TenantConfig:
    default_model: str
    default_voice: str
    default_language: str
    default_trunk_id: str
    sfu: dict[str, float] = field(default_factory=dict)
    external_issuer: ExternalIssuer | None = None
    outcome_email: bool = True
    outcome_email_sender_name: str = ""
    voicemail_message: str = ""
    prompts: dict[str, str] = field(default_factory=dict)

    def prompt_text(self, system_prompt: str) -> str:
        """A known prompt slug's text; any other system prompt as it is (spec 2.2)."""
        return self.prompts.get(system_prompt.strip(), system_prompt)

    @classmethod
    def from_settings(cls, raw: Mapping[str, Any] | None) -> TenantConfig:
        """The configuration a tenant's stored settings give (``None``: a row that has none,
        every default)."""
        raw = raw or {}

        def text(key: str) -> str:
            value = raw.get(key)
            return str(value) if value not in (None, "") else STRING_SETTINGS[key]

        sfu = {
            name: tunable.snap(raw.get(SFU_PREFIX + name, tunable.default))
            for name, tunable in SFU_TUNABLES.items()
        }
        issuer = text("ExternalOidc:Issuer")
        external = (
            ExternalIssuer(
                issuer=issuer,
                jwks_url=text("ExternalOidc:JwksUrl"),
                tenant_claim=text("ExternalOidc:TenantClaim"),
                role_claim=text("ExternalOidc:RoleClaim"),
            )
            if issuer
            else None
        )
        return cls(
            default_model=text("DefaultModel"),
            default_voice=text("DefaultVoice"),
            default_language=text("DefaultLanguage"),
            default_trunk_id=text("DefaultTrunkId"),
            sfu=sfu,
            external_issuer=external,
            outcome_email=text("OutcomeEmail:Enabled").strip().lower()
            not in ("false", "0", "no", "off"),
            outcome_email_sender_name=str(raw.get("OutcomeEmail:SenderName") or "")[:100],
            voicemail_message=str(raw.get("Voicemail:Message") or "").strip(),
            prompts={
                key[len(PROMPT_PREFIX) :]: str(value)
                for key, value in raw.items()
                if key.startswith(PROMPT_PREFIX) and str(value or "").strip()
            },
        )
