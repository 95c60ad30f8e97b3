"""Log configuration. Secrets never reach a log line: they are redacted before formatting."""

from __future__ import annotations

import logging
import re

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


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
