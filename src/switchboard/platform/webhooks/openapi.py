"""The events in the platform's OpenAPI description: its top-level ``webhooks`` map (OpenAPI
3.1), one ``post`` per event name of the catalogue, what a subscriber's URL receives.

Each entry's request body is that event's envelope (spec 6.1, ``event`` its exact name and
``data`` its payload, spec 6.2), generated from the models ``webhooks.outbox.emit`` checks every
payload against (``events.payloads``); its parameters are the headers the sender signs each
attempt with (``tasks.Sender``'s ``Poster.headers``), and its responses say what the sender makes of
the answer (decision 0215)."""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import models_json_schema

from switchboard.platform.events.catalogue import ALL_EVENTS, WEBHOOK_TEST
from switchboard.platform.events.payloads import PAYLOADS, envelope_of
from switchboard.platform.webhooks.service import MAX_ATTEMPTS, PAUSE_AFTER_FAILURES
from switchboard.platform.webhooks.tasks import USER_AGENT
from switchboard.settings import Settings

REF = "#/components/schemas/{model}"
TAG = "events (webhooks)"
DELIVERY_ID = {"type": "string", "pattern": "^[0-9a-f]{32}$"}


def _seconds(values: tuple[float, ...]) -> str:
    return ", ".join(f"{value:g} s" for value in values)


def _failed() -> str:
    defaults = Settings.model_fields
    delays: tuple[float, ...] = defaults["webhook_retry_delays"].default
    timeout: float = defaults["webhook_timeout"].default
    return (
        "A failed attempt: any other status, a redirect (never followed), no answer within "
        f"`SWITCHBOARD_WEBHOOK_TIMEOUT` ({timeout:g} s by default) or a connection error. It is "
        f"retried with the same body and `X-Platform-Signature` after {_seconds(delays)} "
        f"(`SWITCHBOARD_WEBHOOK_RETRY_DELAYS`), {MAX_ATTEMPTS} attempts in all; after "
        f"{PAUSE_AFTER_FAILURES} failed deliveries in a row the subscription is paused (spec "
        "6.1 rules 2-3, docs/webhooks.md)"
    )


def _header(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "in": "header",
        "required": True,
        "description": description,
        "schema": schema,
    }


def _headers(event: str) -> list[dict[str, Any]]:
    return [
        _header("X-Platform-Event", "The event name", {"type": "string", "const": event}),
        _header(
            "X-Platform-Signature",
            "`sha256=` and the hex HMAC-SHA256 of the raw body, keyed with the subscription's "
            "secret as shown at creation (`whsec_...`); the same in every attempt",
            {"type": "string", "pattern": "^sha256=[0-9a-f]{64}$"},
        ),
        _header(
            "X-Platform-Delivery-Id",
            "This event for this subscription, the same in every attempt and redelivery: "
            "de-duplicate on it (delivery is at least once)",
            DELIVERY_ID,
        ),
        _header(
            "X-Platform-Attempt",
            f"1 to {MAX_ATTEMPTS}; a redelivery starts again at 1",
            {"type": "integer", "minimum": 1, "maximum": MAX_ATTEMPTS},
        ),
        _header("webhook-id", "Standard Webhooks: `X-Platform-Delivery-Id`", DELIVERY_ID),
        _header(
            "webhook-timestamp",
            "Standard Webhooks: the attempt's time, Unix seconds",
            {"type": "integer", "minimum": 0},
        ),
        _header(
            "webhook-signature",
            "Standard Webhooks: `v1,` and the base64 HMAC-SHA256 of "
            '`"{webhook-id}.{webhook-timestamp}.{body}"`, keyed with the bytes the secret '
            "encodes after `whsec_`; differs between attempts (its timestamp does)",
            {"type": "string", "pattern": "^v1,[A-Za-z0-9+/]{43}=$"},
        ),
        _header(
            "User-Agent",
            "The sender and its version",
            {"type": "string", "pattern": "^" + USER_AGENT.split("/")[0] + "/"},
        ),
    ]


def _camel(event: str) -> str:
    first, *rest = event.replace("-", ".").split(".")
    return first + "".join(part.capitalize() for part in rest)


def _operation(event: str, envelope: str) -> dict[str, Any]:
    fires = " ".join((PAYLOADS[event].__doc__ or "").split())
    to_whom = (
        "Sent to the one subscription it is queued for, whatever events it lists."
        if event == WEBHOOK_TEST
        else f"Sent to every active subscription of the tenant that lists `{event}` or `*`."
    )
    return {
        "tags": [TAG],
        "summary": fires.split(". ")[0].rstrip("."),
        "description": f"{fires}\n\n{to_whom}",
        "operationId": _camel(event),
        "parameters": _headers(event),
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": REF.format(model=envelope)}}},
        },
        "responses": {
            "2XX": {"description": "Acknowledged: answer at once, do the work afterwards"},
            "401": {
                "description": "The signature does not match (spec 6.1 rule 4): a failed "
                "attempt, retried with the same signature"
            },
            "default": {"description": _failed()},
        },
    }


def describe_webhooks(document: dict[str, Any]) -> None:
    """Add the ``webhooks`` map to ``document``, and its schemas to the components."""
    envelopes = {event: envelope_of(event) for event in ALL_EVENTS}
    _, top = models_json_schema(
        [(model, "validation") for model in envelopes.values()], ref_template=REF
    )
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    clashes = set(schemas) & set(top["$defs"])
    if clashes:
        raise RuntimeError(f"event schemas clash with others: {sorted(clashes)}")
    schemas.update(top["$defs"])
    document["webhooks"] = {
        event: {"post": _operation(event, model.__name__)} for event, model in envelopes.items()
    }
