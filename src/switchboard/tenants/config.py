"""Typed view of a tenant's settings, including the ``Phone:Sfu:*`` tunables (spec 8.1).

Settings are stored as a flat map of keys (``Phone:Sfu:AutoPromoteHumanCount``,
``DefaultVoice``, ...). Out-of-range tunables snap silently to the nearest bound; every other
value is checked by ``check_setting`` with the rules a call's own fields follow. A stored value
that breaks its rule (stored before the rule existed, or written to the database by hand) is
read as the setting's default (a broken ``ExternalOidc:*`` one as no external issuer at all),
and ``stored_problems`` names it (``switchboard tenant check``).
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

VOICES = (
    "Achird", "Aoede", "Autonoe", "Charon", "Erinome", "Fenrir", "Kore",
    "Laomedeia", "Orus", "Puck", "Sadachbia", "Schedar", "Umbriel", "Zephyr",
)  # fmt: skip

SFU_PREFIX = "Phone:Sfu:"
# ``Prompts:<slug>``: a known prompt; a call whose systemPrompt is the slug gets its text
PROMPT_PREFIX = "Prompts:"
SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
# A locale tag as a call's ``language`` takes it (spec 2.2); the default language is one.
LOCALE_RE = re.compile(r"^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$")
MAX_LOCALE = 35
MAX_MODEL = 128  # a call's ``model``
MAX_PROMPT = 50_000  # a call's ``systemPrompt``


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


# The settings of the trusted external issuer (``ExternalIssuer``).
EXTERNAL_SETTINGS = (
    "ExternalOidc:Issuer",
    "ExternalOidc:JwksUrl",
    "ExternalOidc:TenantClaim",
    "ExternalOidc:RoleClaim",
)


class SettingRefused(ValueError):
    """A tenant setting's value breaks its rule; the message names the key and the rule."""


ON_WORDS = ("true", "1", "yes", "on")
OFF_WORDS = ("false", "0", "no", "off")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _max_text(limit: int, *, line: bool = True) -> Callable[[str], str]:
    def check(value: str) -> str:
        if len(value) > limit:
            raise ValueError(f"at most {limit:,} characters")
        if line and _CONTROL.search(value):
            raise ValueError("one line without control characters")
        return value

    return check


def _voice(value: str) -> str:
    if value not in VOICES:
        raise ValueError("must be one of " + ", ".join(VOICES))
    return value


def _locale(value: str) -> str:
    if len(value) > MAX_LOCALE or not LOCALE_RE.match(value):
        raise ValueError("must be a locale tag such as en-US")
    return value


def _trunk_id(value: str) -> str:
    if len(value) > 64 or re.search(r"[\s\x00-\x1f\x7f]", value):
        raise ValueError("1 to 64 characters without spaces")
    return value


def _switch(value: str) -> str:
    word = value.lower()
    if word in ON_WORDS:
        return "true"
    if word in OFF_WORDS:
        return "false"
    raise ValueError("must be true or false")


def secure_url(value: str) -> str:
    """https, or http on a loopback host (a provider on the same machine): the rule of every
    issuer URL (the trusted external issuer's settings, federation's providers)."""
    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError:
        host = None
    if not host or parts.query or parts.fragment or _CONTROL.search(value) or " " in value:
        raise ValueError("must be an absolute URL without query or fragment")
    if parts.scheme == "https":
        return value
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if parts.scheme == "http" and loopback:
        return value
    raise ValueError("must be https (http only on a loopback address)")


# Each string setting's rule; an empty value always means "the default" and is allowed.
STRING_RULES: dict[str, Callable[[str], str]] = {
    "DefaultModel": _max_text(MAX_MODEL),
    "DefaultVoice": _voice,
    "DefaultLanguage": _locale,
    "DefaultTrunkId": _trunk_id,
    "ExternalOidc:Issuer": secure_url,
    "ExternalOidc:JwksUrl": secure_url,
    "ExternalOidc:TenantClaim": _max_text(255),
    "ExternalOidc:RoleClaim": _max_text(255),
    "OutcomeEmail:Enabled": _switch,
    "OutcomeEmail:SenderName": _max_text(100),
    "Voicemail:Message": _max_text(MAX_PROMPT, line=False),
}


def _rule(key: str) -> Callable[[str], str]:
    return STRING_RULES.get(key, _max_text(MAX_PROMPT, line=False))  # ``Prompts:<slug>``


def check_setting(key: str, value: str) -> str | float:
    """The value to store for ``key`` (a known key): a tunable as a number snapped to its
    bounds, any other setting as text that follows its rule; else SettingRefused."""
    if key.startswith(SFU_PREFIX):
        tunable = SFU_TUNABLES[key[len(SFU_PREFIX) :]]
        try:
            number = float(value)
        except ValueError:
            raise SettingRefused(f"{key}: must be a number") from None
        if not math.isfinite(number):
            raise SettingRefused(f"{key}: must be a finite number")
        return tunable.snap(number)
    text = value.strip()
    if text == "":
        return ""
    try:
        return _rule(key)(text)
    except ValueError as exc:
        raise SettingRefused(f"{key}: {exc}") from None


def _stored_text(raw: Mapping[str, Any], key: str) -> str:
    """The stored text of a string setting, "" when unset or when it breaks its rule."""
    value = raw.get(key)
    if value in (None, ""):
        return ""
    try:
        return _rule(key)(str(value).strip())
    except ValueError:
        return ""


def _breaks_rule(raw: Mapping[str, Any], key: str) -> bool:
    """Whether ``key`` is stored with a value that breaks its rule."""
    value = raw.get(key)
    return value not in (None, "") and _stored_text(raw, key) == ""


def stored_problems(raw: Mapping[str, Any] | None) -> list[str]:
    """Each stored string setting that breaks its rule and is therefore read as its default,
    as ``<key>: <rule>`` (sorted by key)."""
    problems = []
    for key, value in sorted((raw or {}).items()):
        if key.startswith(SFU_PREFIX) or not known_key(key) or value in (None, ""):
            continue
        try:
            _rule(key)(str(value).strip())
        except ValueError as exc:
            problems.append(f"{key}: {exc}")
    return problems


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
            return _stored_text(raw, key) or STRING_SETTINGS[key]

        sfu = {
            name: tunable.snap(raw.get(SFU_PREFIX + name, tunable.default))
            for name, tunable in SFU_TUNABLES.items()
        }
        # Any trust setting that breaks its rule is no trust at all (fail closed): read as its
        # default, a broken tenant claim would check no tenant and a broken role claim would
        # read the ``role`` claim.
        trust_broken = any(_breaks_rule(raw, key) for key in EXTERNAL_SETTINGS)
        issuer = "" if trust_broken else text("ExternalOidc:Issuer")
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
            outcome_email=text("OutcomeEmail:Enabled") == "true",
            outcome_email_sender_name=_stored_text(raw, "OutcomeEmail:SenderName"),
            voicemail_message=_stored_text(raw, "Voicemail:Message"),
            prompts={
                key[len(PROMPT_PREFIX) :]: str(value)
                for key in raw
                if key.startswith(PROMPT_PREFIX)
                and known_key(key)
                and (value := _stored_text(raw, key))
            },
        )
