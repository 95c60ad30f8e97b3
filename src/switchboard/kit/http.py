"""HTTP conventions shared by every sub-application.

Every response carries ``Cache-Control: no-store``; every error, including unknown routes,
wrong methods and invalid input, is rendered as ``{error, error_description}`` and never as 422.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any
from urllib.parse import unquote_to_bytes

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware import Middleware
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from switchboard.kit.errors import ApiError, PayloadTooLarge

log = logging.getLogger("switchboard.http")


class JsonResponse(Response):
    """JSON through orjson, for bodies that are not pydantic models."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def error_response(error: ApiError) -> JsonResponse:
    return JsonResponse(error.body(), status_code=error.status, headers=error.headers)


class RejectNulMiddleware:
    """A NUL character in the path or query is never legitimate: 400 before any handler runs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (
            "\x00" in scope["path"]
            or b"%00" in scope["query_string"]
            or b"\x00" in scope["query_string"]
        ):
            response = error_response(ApiError("the URL must not contain NUL characters"))
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


NOT_JSON = "the request body is not valid JSON"


def first_repeated(items: Iterable[tuple[str, object]]) -> str | None:
    """The first key named twice among ``items`` (a JSON object's pairs, a query's or a form's
    parameters), if any: which copy would win is the parser's whim (OAuth: "MUST NOT be
    included more than once", RFC 6749 §3.1, §3.2)."""
    seen: set[str] = set()
    for key, _value in items:
        if key in seen:
            return key
        seen.add(key)
    return None


def not_utf8(encoded: bytes) -> bool:
    """Whether a query string or an ``application/x-www-form-urlencoded`` body holds a name or
    value that is not UTF-8 once percent-decoded. The parsers put U+FFFD in place of such bytes,
    so a value echoed back (OAuth's ``state``) would return altered rather than be refused."""
    for pair in encoded.split(b"&"):
        try:
            unquote_to_bytes(pair.replace(b"+", b" ")).decode("utf-8")
        except UnicodeDecodeError:
            return True
    return False


def json_problem(raw: bytes) -> str | None:
    """What is wrong with a JSON document as a request body: it does not parse, or one of its
    objects names a key twice (the first such key); None when nothing is."""
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        repeated = first_repeated(items)
        if repeated is not None and not found:
            found.append(repeated)
        return dict(items)

    try:
        json.loads(raw, object_pairs_hook=pairs)
    except ValueError:
        return NOT_JSON
    return f"the JSON body names the key {found[0]!r} more than once" if found else None


class RejectDuplicateKeysMiddleware:
    """A JSON body naming one key twice is ambiguous (which value wins depends on the parser):
    400 naming the key, before any handler runs, for every JSON endpoint of every API. A JSON
    body that does not parse is refused here too (decision 0016): an endpoint that reads no
    body would otherwise act on a request whose body nobody could read."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        content_type = b""
        for key, value in scope["headers"]:
            if key == b"content-type":
                content_type = value.split(b";")[0].strip().lower()
        if content_type and not content_type.endswith(b"json"):
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        chunks: list[bytes] = []
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        raw = b"".join(chunks)
        stripped = raw.lstrip()
        # a body that says it is JSON, or looks like it where nothing says what it is
        json_body = content_type.endswith(b"json") or stripped[:1] in (b"{", b"[")
        try:
            problem = json_problem(raw) if stripped and json_body else None
        except RecursionError:  # deeper than any parser of ours follows
            problem = "the JSON body nests too deeply"
        if problem is not None:
            await error_response(ApiError(problem))(scope, receive, send)
            return

        async def replay() -> Message:
            if messages:
                return messages.pop(0)
            return await receive()

        await self.app(scope, replay, send)


_HEAD_KEY = "switchboard.head"


def asked_head(request: Request) -> bool:
    """Whether the client sent HEAD (``HeadMiddleware`` hands the handler a GET)."""
    return bool(request.scope.get(_HEAD_KEY))


class HeadMiddleware:
    """HEAD wherever GET is answered (RFC 9110, 9.3.2; decision 0015): the application sees a
    GET, and the client gets its status and headers, ``Content-Length`` included, and no body.

    The response ends with its headers, so a stream (server-sent events) ends there too: its
    handler then sees the client gone. The scope says ``HEAD`` again once the headers are sent,
    so the server, the access log and the metrics see the request as it came. A handler whose
    GET records something (a share link's view) asks ``asked_head`` and records nothing.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        ended = False

        async def headers_only(message: Message) -> None:
            nonlocal ended
            if ended:
                return
            scope["method"] = "HEAD"
            await send(message)
            if message["type"] == "http.response.start":
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                ended = True

        scope["method"] = "GET"
        scope[_HEAD_KEY] = True
        try:
            await self.app(scope, receive, headers_only)
        finally:
            scope["method"] = "HEAD"


class NoStoreMiddleware:
    """Adds ``Cache-Control: no-store`` to every HTTP response, static assets and errors
    included (spec 1; decision 0014): any other ``Cache-Control`` an endpoint set is replaced."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k != b"cache-control"]
                headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_header)


# Where FastAPI says an input came from; the field's own name follows.
_LOCATIONS = frozenset({"body", "query", "path", "header", "cookie"})
# A message that already starts with the name of the field it is about (``maxSeconds: ...``).
_NAMED = re.compile(r"^[A-Za-z][\w.\-]*: ")


def describe_validation(errors: Sequence[Any]) -> str:
    """A one-line description of pydantic/FastAPI validation errors, each part ``name: what``
    with the field as the client sent it (``limit``, ``scheduleAtUtc``, ``numbers.0.number``):
    the style of every hand-written check, so a description names a field one way whichever
    check refused it. ``body`` stands for the body as a whole."""
    parts = []
    for err in list(errors)[:5]:
        if err.get("type") == "json_invalid":
            return NOT_JSON
        loc = [str(p) for p in err.get("loc", ())]
        if loc and loc[0] in _LOCATIONS:
            loc = loc[1:]
        msg = str(err.get("msg", "invalid value"))
        if err.get("type") == "value_error":  # a validator's own text, without pydantic's prefix
            msg = msg.removeprefix("Value error, ")
        if loc:
            parts.append(f"{'.'.join(loc)}: {msg}")
        else:
            parts.append(msg if _NAMED.match(msg) else f"body: {msg}")
    return "; ".join(parts) or "invalid request"


def media_type(request: Request) -> str:
    """The request body's media type, lower case, without its parameters ("" when none)."""
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _body_not_json(request: Request, errors: Sequence[Any]) -> str | None:
    """The media type of a body that a JSON endpoint could not read because it was sent as
    something else, or without a ``Content-Type`` (FastAPI then validates the raw bytes, and
    says only that they are no object), in the words of decision 0212 (``, not text/plain``), or
    None."""
    media = media_type(request)
    if media == "application/json" or media.endswith("+json"):
        return None
    for err in errors:
        if tuple(err.get("loc", ())) == ("body",) and err.get("type") != "missing":
            return f", not {media}" if media else " (the request has no Content-Type)"
    return None


_STATUS_CODES = {
    400: "invalid_request",
    401: "invalid_token",
    403: "insufficient_scope",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


async def http_exception_response(_request: Any, exc: Exception) -> Response:
    """Starlette's own 404/405 (unknown route, wrong method) in the shared error body."""
    assert isinstance(exc, StarletteHTTPException)
    code = _STATUS_CODES.get(exc.status_code, "error")
    if exc.status_code == 404:
        description = "no such resource"
    elif exc.status_code == 405:
        description = "method not allowed on this resource"
    else:
        description = str(exc.detail)
    headers = dict(exc.headers or {})
    if exc.status_code == 405 and isinstance(_request, Request):
        headers["Allow"] = _allowed_methods(_request.scope) or headers.get("Allow", "")
    return error_response(ApiError(description, code=code, status=exc.status_code, headers=headers))


def _allowed_methods(scope: Scope) -> str:
    """Every method the resource answers, not only the first route's (RFC 9110, 15.5.6).

    Starlette answers a wrong method with the ``Allow`` of the first route whose path matches,
    while FastAPI declares one route per method, so the header named one of them. The methods
    come from the application's own OpenAPI document: ``Allow`` and the document agree.
    """
    app = scope.get("app")
    if not isinstance(app, FastAPI):
        return ""
    table: list[tuple[re.Pattern[str], set[str]]] | None = getattr(app.state, "allow_table", None)
    if table is None:
        table = []
        for template, operations in app.openapi().get("paths", {}).items():
            regex = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
            methods = {method.upper() for method in operations if method in _HTTP_METHODS}
            if "GET" in methods:
                methods.add("HEAD")
            table.append((re.compile(regex), methods))
        app.state.allow_table = table
    root_path = scope.get("root_path", "")
    path: str = scope["path"]
    path = path[len(root_path) :] if root_path and path.startswith(root_path) else path
    allowed: set[str] = set()
    for pattern, methods in table:
        if pattern.fullmatch(path):
            allowed |= methods
    return ", ".join(sorted(allowed))


_HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


def install_error_handlers(app: FastAPI) -> None:
    async def on_api_error(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return error_response(exc)

    async def on_validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError | ValidationError)
        sent_as = _body_not_json(request, exc.errors())
        if sent_as is not None:  # 400 like any bad input (spec 7), saying what is wrong (0212)
            description = f"the body must be JSON, sent as Content-Type: application/json{sent_as}"
            return error_response(ApiError(description))
        return error_response(ApiError(describe_validation(exc.errors())))

    async def on_http(request: Request, exc: Exception) -> Response:
        return await http_exception_response(request, exc)

    async def on_unexpected(_request: Request, exc: Exception) -> Response:
        log.exception("unhandled error", exc_info=exc)
        return error_response(ApiError("internal error", code="server_error", status=500))

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(ValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_unexpected)


def operation_id(route: APIRoute) -> str:
    """A short, stable operationId from the endpoint's function name: ``list_calls`` is
    ``listCalls`` (generated clients get usable method names)."""
    head, *rest = route.name.strip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def prefixed_ids(prefix: str) -> Callable[[APIRoute], str]:
    """operationIds of a router whose names repeat another's: ``laundryListInvoices``."""

    def generate(route: APIRoute) -> str:
        name = operation_id(route)
        return prefix + name[:1].upper() + name[1:]

    return generate


def new_api(runtime: Any, *, title: str, version: str, description: str = "") -> FastAPI:
    """A sub-application with the shared conventions; standalone it runs its own lifespan."""

    app = FastAPI(
        title=title,
        version=version,
        description=description,
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        lifespan=lambda _app: runtime.lifespan(),
        generate_unique_id_function=operation_id,
    )
    # A path with a slash too many is no route (404, the error body), as it is on every API of
    # the process: the framework's redirect named an absolute URL with the scheme it saw, which
    # behind a TLS proxy is http, and answered some collections and not others.
    app.router.redirect_slashes = False
    app.state.runtime = runtime
    install_error_handlers(app)
    return app


class BodyLimitMiddleware:
    """Answers 413 with the error body once a request body is above its limit.

    A declared ``Content-Length`` above the limit is refused before any byte is read; otherwise
    the body is read up to the limit (chunked bodies included) and handed on, so no handler ever
    sees more than the limit. ``larger`` names paths (regular expressions searched in the path)
    with a limit of their own, e.g. the uploads.
    """

    def __init__(
        self, app: ASGIApp, limit: int, larger: Sequence[tuple[re.Pattern[str], int]] = ()
    ) -> None:
        self.app = app
        self.limit = limit
        self.larger = tuple(larger)

    def limit_for(self, path: str) -> int:
        for pattern, limit in self.larger:
            if pattern.search(path):
                return limit
        return self.limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])

        def too_large(scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
            # built only when refusing: most requests are within the limit
            refusal = PayloadTooLarge(f"the request body is limited to {limit} bytes")
            return error_response(refusal)(scope, receive, send)

        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await too_large(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await too_large(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


FrontAnswer = Callable[[Scope, Send], Awaitable[None]]
FRONT_METHODS = ("GET", "HEAD")  # the methods a front answer is given


async def _no_front(_scope: Scope, _send: Send) -> None:
    raise AssertionError("no front answer")


class LayeredStarlette(Starlette):
    """A Starlette application with ``outer`` middlewares around its whole stack, outside the
    error middleware: the access log sees (and tags) the ``500`` of an unhandled error, and the
    answers made without the routing (the read cache) skip a layer they never need.

    ``front`` is ``(path, answer)``: a plain ``GET`` or ``HEAD`` of exactly that path, without a
    query, is answered by ``answer(scope, send)`` in the application's own call, ahead of every
    layer (the catalogue, the same stored bytes for every caller: issue 19, decision 0940). The
    answer does its own request id, latency and access log line."""

    def __init__(
        self,
        *,
        outer: Sequence[Middleware],
        front: tuple[str, FrontAnswer] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.outer_middleware = list(outer)
        # No request's path is empty, so without a front answer the test below never matches.
        self.front_path, self.front_answer = front or ("", _no_front)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] == self.front_path
            and not scope["query_string"]
            and scope["method"] in FRONT_METHODS
        ):
            await self.front_answer(scope, send)
            return
        await super().__call__(scope, receive, send)

    def build_middleware_stack(self) -> ASGIApp:
        app = super().build_middleware_stack()
        for cls, args, kwargs in reversed(self.outer_middleware):
            app = cls(app, *args, **kwargs)
        return app
