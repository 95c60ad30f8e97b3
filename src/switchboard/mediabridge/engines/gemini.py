"""The Gemini Live adapter: a call's conversation through the official ``google-genai`` SDK
(``client.aio.live.connect``).

Per call: the model, voice, language and system instruction of the call, input and output
transcription on, two tools (``end_call``, ``transfer_call``) and session resumption. The
caller's 8 kHz audio is resampled to 16 kHz and streamed as realtime input; the model's 24 kHz
audio is resampled to 8 kHz and queued in 20 ms frames; ``interrupted`` (the caller spoke over
the model) drops the queue at once. On ``goAway`` the session reconnects with the latest
resumption handle, without dropping the call. The API key goes to the SDK only: it is never
logged, and any error text is scrubbed of it before it leaves this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from switchboard.mediabridge.engines.base import (
    CLOSING_LINE_MAX_SEC,
    FRAME_BYTES,
    Conversation,
    EndCall,
    EngineError,
    FinishReason,
    Record,
    Signal,
    Speaker,
    TransferCall,
    TurnRecord,
)
from switchboard.mediabridge.engines.resample import StreamResampler

log = logging.getLogger("switchboard.mediabridge.gemini")


class _RedactKeyHeader(logging.Filter):
    """The websockets client logs every handshake header at DEBUG, the SDK's ``x-goog-api-key``
    among them: that line leaves without its value."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "x-goog-api-key" in message.lower():
            record.msg, record.args = "> x-goog-api-key: [redacted]", None
        return True


logging.getLogger("websockets.client").addFilter(_RedactKeyHeader())

MODEL_RATE = 24000
INPUT_RATE = 16000
INPUT_MIME = f"audio/pcm;rate={INPUT_RATE}"
CONNECT_TIMEOUT_SEC = 15.0
SEND_QUEUE_FRAMES = 250  # 5 s of caller audio; older frames are dropped when the model lags
SEND_BATCH_BYTES = 5 * FRAME_BYTES * 2  # at most 100 ms of 16 kHz audio per message
END_OUTCOMES = ("finished", "not-now", "voicemail")
VOICEMAIL_RULE = (
    "\n\nWhen you hear an answering machine or voicemail greeting instead of a person, call "
    "end_call with outcome voicemail at once, without leaving a message."
)
VOICEMAIL_MESSAGE_RULE = (
    "\n\nWhen you hear an answering machine or voicemail greeting instead of a person, wait for "
    "the greeting to end, say this message and nothing else: {message}\nThen call end_call with "
    "outcome voicemail."
)
TRANSFER_FAILED = (
    "The transfer did not go through ({detail}). Tell the caller they could not be put through "
    "and carry on with the call."
)
CLOSING_REQUEST = (
    "The call has reached its time limit. Say one short, polite goodbye sentence now and nothing "
    "else."
)

END_CALL = types.FunctionDeclaration(
    name="end_call",
    description=(
        "End the phone call. outcome: finished (the conversation reached its end), not-now (the "
        "person asked to be called another time) or voicemail (a voicemail greeting answered)."
    ),
    parameters=types.Schema(
        type=types.Type.OBJECT,
        properties={"outcome": types.Schema(type=types.Type.STRING, enum=list(END_OUTCOMES))},
        required=["outcome"],
    ),
)
TRANSFER_CALL = types.FunctionDeclaration(
    name="transfer_call",
    description=(
        "Hand the caller to someone else: target is a colleague's user name or a phone number "
        "in E.164 form (+4930...)."
    ),
    parameters=types.Schema(
        type=types.Type.OBJECT,
        properties={"target": types.Schema(type=types.Type.STRING)},
        required=["target"],
    ),
)


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class GeminiEndpoint:
    """Where the SDK connects: Google's service by default; tests and proxies name another
    (``base_url`` ``https://host:port``) and the TLS context that trusts it."""

    base_url: str | None = None
    api_version: str = "v1beta"
    ssl_context: ssl.SSLContext | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> GeminiEndpoint:
        """``SWITCHBOARD_GEMINI_BASE_URL``, ``SWITCHBOARD_GEMINI_API_VERSION`` and
        ``SWITCHBOARD_GEMINI_CA_FILE`` (a PEM bundle to trust instead of the system's)."""
        ca_file = environ.get("SWITCHBOARD_GEMINI_CA_FILE", "").strip()
        try:
            context = ssl.create_default_context(cafile=ca_file) if ca_file else None
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"SWITCHBOARD_GEMINI_CA_FILE: cannot load {ca_file}: {exc}") from None
        return cls(
            base_url=environ.get("SWITCHBOARD_GEMINI_BASE_URL", "").strip() or None,
            api_version=environ.get("SWITCHBOARD_GEMINI_API_VERSION", "").strip() or "v1beta",
            ssl_context=context,
        )


class GeminiEngine:
    """The factory; one per bridge process."""

    name = "gemini"

    def __init__(
        self,
        *,
        endpoint: GeminiEndpoint | None = None,
        now: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.endpoint = endpoint or GeminiEndpoint()
        self.now = now

    def client(self, api_key: str) -> genai.Client:
        options = types.HttpOptions(api_version=self.endpoint.api_version)
        if self.endpoint.base_url:
            options.base_url = self.endpoint.base_url
        if self.endpoint.ssl_context is not None:
            options.async_client_args = {"ssl": self.endpoint.ssl_context}
        return genai.Client(api_key=api_key, http_options=options)

    def session(self, conversation: Conversation) -> GeminiSession:
        return GeminiSession(self, conversation)


def _model_name(model: str) -> str:
    return model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"


class _Transcript:
    """Transcription fragments gathered into turns, each stamped when its first words came."""

    def __init__(self, record: Record, now: Callable[[], datetime]) -> None:
        self._record = record
        self._now = now
        self._open: dict[Speaker, tuple[datetime, list[str]]] = {}

    def add(self, speaker: Speaker, text: str) -> None:
        if not text:
            return
        other: Speaker = "AI" if speaker == "Caller" else "Caller"
        self.close(other)  # a turn ends when the other side starts talking
        if speaker not in self._open:
            self._open[speaker] = (self._now(), [])
        self._open[speaker][1].append(text)

    def close(self, speaker: Speaker | None = None) -> None:
        everyone: list[Speaker] = ["Caller", "AI"]
        for who in [speaker] if speaker else everyone:
            opened = self._open.pop(who, None)
            if opened is None:
                continue
            text = "".join(opened[1]).strip()
            if not text:
                continue
            self._record.turns.append(TurnRecord(who, text, opened[0]))
            if who == "AI":
                self._record.output_turns += 1
            else:
                self._record.input_turns += 1
        self._record.turns.sort(key=lambda turn: turn.ts)


class GeminiSession:
    """One call's Live session: a sender task, a receiver task, and the frames between them."""

    def __init__(self, engine: GeminiEngine, conversation: Conversation) -> None:
        self._engine = engine
        self._conversation = conversation
        self.record = Record()
        self._transcript = _Transcript(self.record, engine.now)
        self._to_model = StreamResampler(8000, INPUT_RATE)
        self._from_model = StreamResampler(MODEL_RATE, 8000)
        self._pending = b""  # model audio at 8 kHz not yet a whole frame
        self._out: deque[bytes] = deque()
        self._send: asyncio.Queue[bytes] = asyncio.Queue(SEND_QUEUE_FRAMES)
        self._signal: asyncio.Future[Signal] | None = None
        self._turn_done = asyncio.Event()
        self._ready = asyncio.Event()  # set while a connection is open
        self._handle: str | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._live: Any = None
        self._tasks: list[asyncio.Task[None]] = []
        self._finished: Record | None = None
        self.connections = 0

    # Connecting ------------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        key = self._conversation.api_key
        line = " ".join(text.split())
        return line.replace(key, "[key]") if key else line

    def _failure(self, exc: BaseException, doing: str) -> EngineError:
        if isinstance(exc, genai_errors.APIError):
            # A close frame's reason arrives as ``details`` (a string), a JSON error as ``message``.
            reason = exc.message or (exc.details if isinstance(exc.details, str) else "")
            detail = f"{exc.code} {reason or exc.status or ''}".strip()
        else:
            detail = str(exc) or type(exc).__name__
        return EngineError(self._scrub(f"Gemini Live {doing} failed: {detail}"))

    def _config(self) -> types.LiveConnectConfig:
        c = self._conversation
        instruction = c.system_prompt
        if c.voicemail_message:
            instruction += VOICEMAIL_MESSAGE_RULE.format(message=c.voicemail_message)
        else:
            instruction += VOICEMAIL_RULE
        return types.LiveConnectConfig(
            response_modalities=[types.Modality.AUDIO],
            speech_config=types.SpeechConfig(
                voice_config=types.VoiceConfig(
                    prebuilt_voice_config=types.PrebuiltVoiceConfig(voice_name=c.voice)
                ),
                language_code=c.language,
            ),
            system_instruction=types.Content(parts=[types.Part(text=instruction)]),
            tools=[types.Tool(function_declarations=[END_CALL, TRANSFER_CALL])],
            input_audio_transcription=types.AudioTranscriptionConfig(),
            output_audio_transcription=types.AudioTranscriptionConfig(),
            session_resumption=types.SessionResumptionConfig(handle=self._handle),
        )

    async def _connect(self, doing: str) -> None:
        stack = contextlib.AsyncExitStack()
        client = self._engine.client(self._conversation.api_key)
        try:
            connecting = client.aio.live.connect(
                model=_model_name(self._conversation.model), config=self._config()
            )
            self._live = await asyncio.wait_for(
                stack.enter_async_context(connecting), CONNECT_TIMEOUT_SEC
            )
        except (Exception, TimeoutError) as exc:
            await stack.aclose()
            raise self._failure(exc, doing) from None
        self._stack = stack
        self.connections += 1
        self._ready.set()

    async def _disconnect(self) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            with contextlib.suppress(Exception):
                await stack.aclose()

    async def start(self) -> None:
        self._signal = asyncio.get_running_loop().create_future()
        try:
            await self._connect("connect")
        except EngineError as exc:
            self.record.error_detail = str(exc)
            raise
        self._tasks = [
            asyncio.create_task(self._sender(), name="gemini-send"),
            asyncio.create_task(self._receiver(), name="gemini-receive"),
        ]

    # Audio -----------------------------------------------------------------------------------

    def feed(self, frame: bytes) -> None:
        if len(frame) != FRAME_BYTES:
            raise ValueError(f"a frame is {FRAME_BYTES} bytes, not {len(frame)}")
        if self._finished is not None:
            return
        chunk = self._to_model(frame)
        if self._send.full():  # the model lags: keep the newest audio
            self._send.get_nowait()
        self._send.put_nowait(chunk)

    def next_frame(self) -> bytes | None:
        return self._out.popleft() if self._out else None

    def _play(self, pcm_24k: bytes) -> None:
        self._pending += self._from_model(pcm_24k)
        whole = len(self._pending) - len(self._pending) % FRAME_BYTES
        for i in range(0, whole, FRAME_BYTES):
            self._out.append(self._pending[i : i + FRAME_BYTES])
        self._pending = self._pending[whole:]

    def _barge_in(self) -> None:
        self._out.clear()
        self._pending = b""

    # The tasks -------------------------------------------------------------------------------

    async def _sender(self) -> None:
        """Stream the caller's audio; a chunk that meets a closing connection waits for the
        resumed one (the receiver reconnects, or fails the call)."""
        chunk = b""
        while True:
            if not chunk:
                chunk = await self._send.get()
                while not self._send.empty() and len(chunk) < SEND_BATCH_BYTES:
                    chunk += self._send.get_nowait()
            await self._ready.wait()
            live = self._live
            try:
                await live.send_realtime_input(audio=types.Blob(data=chunk, mime_type=INPUT_MIME))
                chunk = b""
            except Exception:
                if self._live is live:
                    self._ready.clear()

    def _fail(self, error: EngineError) -> None:
        if self._signal is not None and not self._signal.done():
            self._signal.set_exception(error)
        if not self.record.error_detail:
            self.record.error_detail = str(error)

    def _raise_signal(self, signal: Signal) -> None:
        if self._signal is not None and not self._signal.done():
            self._signal.set_result(signal)

    async def _receiver(self) -> None:
        while True:
            try:
                went_away = await self._receive_until_go_away()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._fail(self._failure(exc, "session"))
                return
            if not went_away:
                return
            self._ready.clear()
            await self._disconnect()
            try:
                await self._connect("resumption")
            except EngineError as exc:
                self._fail(exc)
                return
            log.info("gemini session resumed (connection %d)", self.connections)

    async def _receive_until_go_away(self) -> bool:
        """Handle server messages; True when the server asked us to reconnect."""
        while True:
            async for message in self._live.receive():
                if message.go_away is not None:
                    return True
                await self._handle_message(message)

    async def _handle_message(self, message: types.LiveServerMessage) -> None:
        update = message.session_resumption_update
        if update is not None and update.resumable and update.new_handle:
            self._handle = update.new_handle
        if message.usage_metadata is not None:
            usage = message.usage_metadata
            self.record.tokens_prompt += usage.prompt_token_count or 0
            self.record.tokens_total += usage.total_token_count or 0
        content = message.server_content
        if content is not None:
            if content.input_transcription and content.input_transcription.text:
                self._transcript.add("Caller", content.input_transcription.text)
            if content.output_transcription and content.output_transcription.text:
                self._transcript.add("AI", content.output_transcription.text)
            if content.interrupted:
                self._barge_in()
                self._transcript.close("AI")
            if content.model_turn and content.model_turn.parts:
                for part in content.model_turn.parts:
                    if part.inline_data and part.inline_data.data:
                        self._play(part.inline_data.data)
            if content.turn_complete:
                self._transcript.close("AI")
                self._turn_done.set()
        if message.tool_call and message.tool_call.function_calls:
            for call in message.tool_call.function_calls:
                await self._tool(call)

    async def _tool(self, call: types.FunctionCall) -> None:
        args = call.args or {}
        answer: dict[str, Any] = {"ok": True}
        if call.name == "end_call" and args.get("outcome") in END_OUTCOMES:
            self._raise_signal(EndCall(args["outcome"]))
        elif call.name == "transfer_call" and str(args.get("target", "")).strip():
            target = str(args["target"]).strip()
            phone = target.lstrip("+").isdigit()
            self._raise_signal(TransferCall(target, "phone" if phone else "user"))
        else:
            answer = {"ok": False, "error": f"unknown tool or arguments: {call.name}"}
        response = types.FunctionResponse(id=call.id, name=call.name, response=answer)
        with contextlib.suppress(Exception):
            await self._live.send_tool_response(function_responses=[response])

    # The end ---------------------------------------------------------------------------------

    async def signal(self) -> Signal:
        assert self._signal is not None, "start() first"
        return await asyncio.shield(self._signal)

    def transfer_failed(self, detail: str) -> None:
        """The bridge could not hand the caller on: the model hears why, as a text turn, and may
        end or transfer the call again."""
        self._signal = asyncio.get_running_loop().create_future()
        note = TRANSFER_FAILED.format(detail=detail)
        self._tasks.append(asyncio.create_task(self._tell(note), name="gemini-tell"))

    async def _tell(self, text: str) -> None:
        try:
            await self._live.send_client_content(
                turns=types.Content(role="user", parts=[types.Part(text=text)]), turn_complete=True
            )
        except Exception as exc:
            log.info("gemini text turn not sent: %s", self._scrub(str(exc)))

    async def _closing_line(self) -> None:
        """Ask the model to say goodbye and wait (at most CLOSING_LINE_MAX_SEC) for it."""
        self._turn_done.clear()
        try:
            await self._live.send_client_content(
                turns=types.Content(role="user", parts=[types.Part(text=CLOSING_REQUEST)]),
                turn_complete=True,
            )
            await asyncio.wait_for(self._turn_done.wait(), CLOSING_LINE_MAX_SEC)
        except (Exception, TimeoutError) as exc:
            log.info("gemini closing line not completed: %s", self._scrub(str(exc)))

    async def finish(self, reason: FinishReason) -> Record:
        if self._finished is not None:
            return self._finished
        if reason == "max-duration" and self._live is not None and not self.record.error_detail:
            await self._closing_line()
        elif reason != "engine":
            self._barge_in()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._disconnect()
        self._transcript.close()
        signal = self._signal
        if signal is not None and signal.done() and not signal.cancelled():
            signal.exception()  # retrieved: the failure is reported through the record
        if self.record.error_detail:
            self.record.outcome = ""
        elif reason == "engine" and signal is not None and signal.done():
            ended = signal.result()
            self.record.outcome = ended.outcome if isinstance(ended, EndCall) else "transferred"
        elif reason == "engine":
            self.record.outcome = "finished"
        else:
            self.record.outcome = reason
        if signal is not None and not signal.done():
            signal.cancel()
        self._finished = self.record
        return self.record
