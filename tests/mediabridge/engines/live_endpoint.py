"""A protocol-faithful local Gemini Live endpoint: a TLS WebSocket server on loopback that speaks
the BidiGenerateContent protocol the way the service does.

It checks the path, the ``x-goog-api-key`` header and the setup frame (closing with the
service's own close code and reason when the key is wrong), answers ``setupComplete``, consumes
realtime audio, and replays a script of server messages per connection. Everything a connection
received is kept for the test to assert on. The certificate is self-signed, made per run, and
trusted only by the test's own TLS context.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from tests.certs import write_self_signed

LIVE_PATH = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
BAD_KEY_CODE = 1007
BAD_KEY_REASON = "API key not valid. Please pass a valid API key."
INVALID = (1007, "Request contains an invalid argument.")
SETUP_FIELDS = {
    "model", "generationConfig", "systemInstruction", "tools", "realtimeInputConfig",
    "sessionResumption", "contextWindowCompression", "inputAudioTranscription",
    "outputAudioTranscription", "proactivity", "explicitVadSignal", "historyConfig",
}  # fmt: skip
SERVED_MODELS = frozenset({"models/gemini-live-test"})


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, and its key, as PEM files."""
    return write_self_signed(
        directory / "live.crt",
        directory / "live.key",
        "live-endpoint.test",
        dns_names=["localhost"],
    )


# Script steps --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Send:
    """Send one server message (a dict in the service's camelCase JSON)."""

    message: dict[str, Any]


@dataclass(frozen=True)
class AwaitAudio:
    """Consume realtime input until this many seconds of 16 kHz audio have arrived in total."""

    seconds: float


@dataclass(frozen=True)
class AwaitToolResponse:
    """Wait for the client's toolResponse."""


@dataclass(frozen=True)
class AwaitClientContent:
    """Wait for a clientContent message (a text turn from the client)."""


@dataclass(frozen=True)
class Close:
    code: int = 1000
    reason: str = ""


Step = Send | AwaitAudio | AwaitToolResponse | AwaitClientContent | Close


def audio(pcm_24k: bytes) -> dict[str, Any]:
    data = base64.b64encode(pcm_24k).decode()
    part = {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": data}}
    return {"serverContent": {"modelTurn": {"parts": [part]}}}


def said(speaker: str, text: str) -> dict[str, Any]:
    key = "inputTranscription" if speaker == "Caller" else "outputTranscription"
    return {"serverContent": {key: {"text": text}}}


TURN_COMPLETE = {"serverContent": {"turnComplete": True}}
INTERRUPTED = {"serverContent": {"interrupted": True}}


def tool_call(name: str, **args: Any) -> dict[str, Any]:
    return {"toolCall": {"functionCalls": [{"id": f"fc-{name}", "name": name, "args": args}]}}


def usage(prompt: int, total: int) -> dict[str, Any]:
    return {"usageMetadata": {"promptTokenCount": prompt, "totalTokenCount": total}}


# The server ----------------------------------------------------------------------------------


def decode_bytes(text: str) -> bytes:
    """Protobuf JSON bytes: standard or URL-safe base64, padded or not."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _camel_key(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel(value: Any) -> Any:
    """Field names as the service reads them: protobuf JSON accepts ``snake_case`` and
    ``camelCase`` alike (the SDK sends some messages in each)."""
    if isinstance(value, dict):
        return {_camel_key(k): camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel(v) for v in value]
    return value


@dataclass
class Connection:
    """What one client connection sent."""

    headers: dict[str, str]
    setup: dict[str, Any] = field(default_factory=dict)
    audio: bytearray = field(default_factory=bytearray)
    mime_types: set[str] = field(default_factory=set)
    tool_responses: list[dict[str, Any]] = field(default_factory=list)
    client_content: list[dict[str, Any]] = field(default_factory=list)
    closed_by_client: bool = False

    @property
    def audio_seconds(self) -> float:
        return len(self.audio) / 2 / 16000


@dataclass
class LiveEndpoint:
    """Serves ``scripts[i]`` to the i-th connection; ``api_key`` is the one valid key."""

    api_key: str
    scripts: list[list[Step]]
    models: frozenset[str] = SERVED_MODELS
    port: int = 0
    connections: list[Connection] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    async def _read(self, ws: ServerConnection, conn: Connection) -> dict[str, Any]:
        message: dict[str, Any] = camel(json.loads(await ws.recv()))
        realtime = message.get("realtimeInput")
        if realtime:
            chunk = realtime.get("audio") or {}
            if chunk:
                conn.mime_types.add(chunk.get("mimeType", ""))
                conn.audio += decode_bytes(chunk.get("data", ""))
        if "toolResponse" in message:
            conn.tool_responses.append(message["toolResponse"])
        if "clientContent" in message:
            conn.client_content.append(message["clientContent"])
        return message

    async def _handle(self, ws: ServerConnection) -> None:
        request = ws.request
        assert request is not None
        conn = Connection(headers={k.lower(): v for k, v in request.headers.raw_items()})
        self.connections.append(conn)
        if request.path.split("?")[0] != LIVE_PATH:
            await ws.close(1008, "Method not found.")
            return
        if conn.headers.get("x-goog-api-key") != self.api_key:
            await ws.close(BAD_KEY_CODE, BAD_KEY_REASON)
            return
        first = camel(json.loads(await ws.recv()))
        setup = first.get("setup")
        problem = self._check_setup(setup) if isinstance(setup, dict) else INVALID
        if problem:
            await ws.close(*problem)
            return
        conn.setup = setup
        await ws.send(json.dumps({"setupComplete": {}}))
        script = self.scripts[min(len(self.connections), len(self.scripts)) - 1]
        try:
            for step in script:
                await self._step(ws, conn, step)
            while True:  # keep consuming until the client hangs up
                await self._read(ws, conn)
        except ConnectionClosed:
            conn.closed_by_client = True

    def _check_setup(self, setup: dict[str, Any]) -> tuple[int, str] | None:
        """What the service refuses in a setup frame: unknown fields, a model it does not
        serve, a response modality other than audio for a native-audio model."""
        unknown = sorted(set(setup) - SETUP_FIELDS)
        if unknown:
            return 1007, f"Invalid JSON payload received. Unknown name \"{unknown[0]}\" at 'setup'."
        model = setup.get("model", "")
        if model not in self.models:
            # A close frame's reason holds at most 123 bytes: the service cuts its message.
            reason = (
                f"{model} is not found for API version v1beta, or is not supported for "
                "bidiGenerateContent. Call ListModels to see the list of available models."
            )
            return 1008, reason.encode()[:123].decode(errors="ignore")
        if (setup.get("generationConfig") or {}).get("responseModalities") != ["AUDIO"]:
            return INVALID
        return None

    async def _step(self, ws: ServerConnection, conn: Connection, step: Step) -> None:
        if isinstance(step, Send):
            await ws.send(json.dumps(step.message))
        elif isinstance(step, AwaitAudio):
            while conn.audio_seconds < step.seconds:
                await self._read(ws, conn)
        elif isinstance(step, AwaitToolResponse):
            while not conn.tool_responses:
                await self._read(ws, conn)
        elif isinstance(step, AwaitClientContent):
            while not conn.client_content:
                await self._read(ws, conn)
        else:
            await ws.close(step.code, step.reason)
            raise ConnectionClosed(None, None)


@contextlib.asynccontextmanager
async def running(endpoint: LiveEndpoint, cert: Path, key: Path) -> AsyncIterator[LiveEndpoint]:
    """Serve ``endpoint`` on a free loopback port for the duration of the block."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    async with serve(endpoint._handle, "127.0.0.1", 0, ssl=context) as server:
        endpoint.port = next(iter(server.sockets)).getsockname()[1]
        yield endpoint
        server.close()
        await asyncio.wait_for(server.wait_closed(), 5)
