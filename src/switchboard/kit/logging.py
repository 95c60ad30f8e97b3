"""Log configuration. Secrets never reach a log line: they are redacted before formatting."""

from __future__ import annotations

import datetime as dt
import logging
import re
from typing import Any

import orjson

_SECRET_PATTERNS = [
    re.compile(r"\bak_[A-Za-z0-9_-]{8,}"),
    re.compile(r"\brt_[A-Za-z0-9_-]{8,}"),
    re.compile(r"\blk_[A-Za-z0-9_-]{8,}"),
    re.compile(r"\bcs_[A-Za-z0-9_-]{8,}"),
    re.compile(r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+"),
    re.compile(r"/share/[A-Za-z0-9_-]{16,}"),
    re.compile(r"(?i)\b(code|code_verifier|csrf_token|sb_idp_session)(=)[^\s,&\"';]+"),
    re.compile(r"(?i)(password|secret|api_?key|authorization|system_?prompt)(\W{1,3})[^\s,&\"']+"),
]


def redact(text: str) -> str:
    for pattern in _SECRET_PATTERNS:
        if pattern.groups >= 2:
            text = pattern.sub(lambda m: f"{m.group(1)}{m.group(2)}[redacted]", text)
        else:
            text = pattern.sub("[redacted]", text)
    return text


class RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


# Fields an access log line adds to its record (see switchboard.ops.middleware).
_EXTRA_FIELDS = ("method", "route", "status", "duration_ms", "request_id")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the access fields when present
    and the exception; every string goes through the redaction."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        for field in _EXTRA_FIELDS:
            value = getattr(record, field, None)
            if value is not None:
                entry[field] = redact(value) if isinstance(value, str) else value
        if record.exc_info:
            entry["exception"] = redact(self.formatException(record.exc_info))
        return orjson.dumps(entry).decode()


def configure_logging(level: str = "INFO", fmt: str = "text") -> None:
    handler = logging.StreamHandler()
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
