"""The one error type of every API, rendered as ``{error, error_description}``."""

from __future__ import annotations


class ApiError(Exception):
    """An error with an HTTP status and a stable machine-readable code."""

    status: int = 400
    code: str = "invalid_request"

    def __init__(
        self,
        description: str,
        *,
        code: str | None = None,
        status: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(description)
        self.description = description
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.headers = headers or {}

    def body(self) -> dict[str, str]:
        return {"error": self.code, "error_description": self.description}


class BadRequest(ApiError):
    """The request is malformed or breaks a rule (400)."""

    status = 400
    code = "invalid_request"


class Unauthorized(ApiError):
    """The bearer is missing or invalid (401). ``WWW-Authenticate`` follows RFC 6750 (3.1):
    ``error="invalid_token"`` for a token that was presented, the bare scheme when none was."""

    status = 401
    code = "invalid_token"

    def __init__(
        self, description: str = "a valid bearer token is required", *, presented: bool = True
    ) -> None:
        challenge = 'Bearer error="invalid_token"' if presented else "Bearer"
        super().__init__(description, headers={"WWW-Authenticate": challenge})


class Forbidden(ApiError):
    """The caller is known but lacks the role for this action (403); a role the token lacks
    (``insufficient_scope``) is also named in ``WWW-Authenticate`` (RFC 6750, 3.1)."""

    status = 403
    code = "insufficient_scope"

    def __init__(
        self, description: str, *, code: str | None = None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(description, code=code, headers=headers)
        if self.code == "insufficient_scope":
            self.headers.setdefault("WWW-Authenticate", 'Bearer error="insufficient_scope"')


class NotFound(ApiError):
    """No such resource for this tenant (404); another tenant's object is 404 too."""

    status = 404
    code = "not_found"


class Conflict(ApiError):
    """The resource already exists or its state forbids the change (409)."""

    status = 409
    code = "conflict"


class PayloadTooLarge(ApiError):
    """The request body is above the endpoint's limit (413)."""

    status = 413
    code = "payload_too_large"


class TooManyRequests(ApiError):
    """The caller is throttled; ``Retry-After`` says for how long (429)."""

    status = 429
    code = "too_many_requests"


class BadGateway(ApiError):
    """An upstream (the media bridge) did not answer (502)."""

    status = 502
    code = "bridge_unreachable"


class ServiceUnavailable(ApiError):
    """An upstream (the media bridge) is not configured (503)."""

    status = 503
    code = "bridge_not_configured"
