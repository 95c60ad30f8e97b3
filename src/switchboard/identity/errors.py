"""The OAuth 2.0 error of the token and authorization endpoints."""

from __future__ import annotations

import re

from switchboard.kit.errors import ApiError

# RFC 6749 §5.2: error_description holds only %x20-21 / %x23-5B / %x5D-7E (printable ASCII
# without the double quote and the backslash); a description that quotes a client's input
# has any other character shown as "?".
_OUTSIDE = re.compile(r"[^\x20-\x21\x23-\x5b\x5d-\x7e]")


class OAuthError(ApiError):
    """An OAuth 2.0 error (RFC 6749 sections 4.1.2.1 and 5.2)."""

    def __init__(
        self, code: str, description: str, *, status: int = 400, retry_after: int | None = None
    ) -> None:
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
        if status == 401:
            headers = {**(headers or {}), "WWW-Authenticate": 'Basic realm="oidc"'}
        description = _OUTSIDE.sub("?", description)
        super().__init__(description, code=code, status=status, headers=headers)
        self.retry_after = retry_after
