"""The Anthropic Messages API adapter: the only module in memagent that imports ``anthropic``.

The SDK is imported on first use (it takes ≈1.5 s), so constructing an :class:`AnthropicModel`
is free; call :meth:`AnthropicModel.prepare` from a background thread to warm it up early.

The adapter streams with ``messages.create(stream=True)`` and accumulates the raw events itself,
so that it decides what a half-finished tool call becomes (it is dropped) instead of relying on
the SDK's partial-JSON parsing. SDK exceptions never escape :meth:`AnthropicModel.stream`: they
become the :mod:`memagent.llm.types` errors, each with a one-line message.
"""

from __future__ import annotations

import contextlib
import gc
import json
import re
import socket
import sys
import threading
import typing
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from memagent.decoding import scrub_value
from memagent.errors import one_line
from memagent.jsontypes import JsonObject, json_str
from memagent.llm.items import wire_message
from memagent.llm.types import (
    Abort,
    AuthenticationError,
    Block,
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    PromptTooLongError,
    ResponseComplete,
    StreamEvent,
    StreamInterrupted,
    TextDelta,
    ToolUseStarted,
    Usage,
)

if TYPE_CHECKING:
    import anthropic
    from anthropic import types as wire

EPHEMERAL = {"type": "ephemeral"}
MAX_CACHE_BREAKPOINTS = 4
UNCACHEABLE_BLOCKS = {"thinking", "redacted_thinking"}
PROMPT_TOO_LONG = re.compile(r"prompt is too long|context (length|window|limit)|too many (input )?tokens", re.I)
MESSAGE_LIMIT = 300
DEFAULT_BASE_URL = "https://api.anthropic.com"


def preload_sdk() -> None:
    """Import the SDK now (from a background thread while something else loads)."""
    _sdk()


# The SDK's optional aiohttp transport, imported by the SDK whenever aiohttp is installed (another
# package may bring it); memagent never asks for it, so the SDK is told it is absent, which the
# SDK supports (its DefaultAioHttpClient then says the extra is missing). Saves ≈0.1 s of import.
UNUSED_SDK_MODULES = ("anthropic._vendor.httpx_aiohttp",)


def _sdk() -> ModuleType:
    if "anthropic" in sys.modules:
        import anthropic

        return anthropic
    for name in UNUSED_SDK_MODULES:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # None: "not installed"
    # Importing the SDK builds thousands of classes and leaves next to no garbage: the cyclic
    # collector, which would walk them over and over while they are built, waits (≈0.2 s less).
    collecting = gc.isenabled()
    gc.disable()
    try:
        import anthropic
    finally:
        if collecting:
            gc.enable()
    return anthropic


def known_model_ids() -> frozenset[str]:
    """Model ids the installed SDK lists in its ``Model`` type."""
    sdk = _sdk()
    ids: set[str] = set()
    for arg in typing.get_args(sdk.types.Model):
        ids.update(a for a in typing.get_args(arg) if isinstance(a, str))
    return frozenset(ids)


def deprecated_models() -> dict[str, str]:
    """Model id -> end-of-life date, as the installed SDK knows them."""
    try:
        from anthropic._data import DEPRECATED_MODELS
    except ImportError:  # a private table; an SDK without it simply tells us nothing
        return {}
    return dict(DEPRECATED_MODELS)


def default_model_id() -> str:
    """``memagent.models.DEFAULT_MODEL``, checked against the installed SDK's model list."""
    from memagent.models import DEFAULT_MODEL

    if DEFAULT_MODEL not in known_model_ids():
        raise LookupError(f"default model {DEFAULT_MODEL!r} is not in the installed anthropic SDK's model list")
    return DEFAULT_MODEL


# --- request building -------------------------------------------------------------------------


def _with_cache_control(block: Block) -> Block:
    return {**block, "cache_control": dict(EPHEMERAL)}


def _count_breakpoints(system: list[Block], tools: list[JsonObject], messages: list[Message]) -> int:
    count = sum("cache_control" in b for b in system) + sum("cache_control" in t for t in tools)
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            count += sum(isinstance(b, dict) and "cache_control" in b for b in content)
    return count


def build_params(request: ModelRequest, default_model: str) -> dict[str, Any]:
    """The keyword arguments for ``messages.create``, with cache breakpoints on the last system
    block, the last tool and the newest message's last block. Copies what it changes; the
    caller's lists and dicts are never mutated, everything else is passed through as is, but for
    lone surrogates (a file name or output that was not UTF-8), which become U+FFFD: the request
    must encode as UTF-8.

    The values are memagent's own JSON; the SDK declares each keyword with its own TypedDicts, so
    this mapping is where the two meet, unchecked (the SDK checks nothing at run time either)."""
    system = list(scrub_value(request.system))
    tools = list(scrub_value(request.tools))
    messages = [wire_message(m) for m in scrub_value(request.messages)]  # memagent's own fields stay home
    budget = MAX_CACHE_BREAKPOINTS - _count_breakpoints(system, tools, messages)
    if system and budget > 0 and "cache_control" not in system[-1]:
        system[-1] = _with_cache_control(system[-1])
        budget -= 1
    if tools and budget > 0 and "cache_control" not in tools[-1]:
        tools[-1] = _with_cache_control(tools[-1])
        budget -= 1
    if messages and budget > 0:
        messages[-1] = _mark_newest_message(messages[-1])
    params: dict[str, Any] = {
        "model": request.model or default_model,
        "max_tokens": request.max_tokens,
        "messages": messages,
    }
    if system:
        params["system"] = system
    if tools:
        params["tools"] = tools
    return params


def _mark_newest_message(message: Message) -> Message:
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}] if content else []
    if not content or not isinstance(content[-1], dict):
        return message
    last = content[-1]
    if last.get("type") in UNCACHEABLE_BLOCKS or "cache_control" in last:
        return message
    return {**message, "content": [*content[:-1], _with_cache_control(last)]}


# --- stream accumulation ----------------------------------------------------------------------


class _Accumulator:
    """Builds the final message from raw stream events."""

    def __init__(self) -> None:
        self.id = ""
        self.model = ""
        self.usage: dict[str, int] = {}
        self.stop_reason: str | None = None
        self.stopped = False
        self.blocks: dict[int, JsonObject] = {}
        self.json_parts: dict[int, list[str]] = {}
        self.finished: dict[int, Block | None] = {}

    def start_message(self, message: wire.Message) -> None:
        self.id = message.id or ""
        self.model = message.model or ""
        self._merge_usage(message.usage)

    def _merge_usage(self, usage: wire.Usage | wire.MessageDeltaUsage | None) -> None:
        if usage is None:
            return
        for key in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
            value = getattr(usage, key, None)
            if value is not None:
                self.usage[key] = int(value)

    def start_block(self, index: int, block: wire.ContentBlock) -> ToolUseStarted | None:
        data: JsonObject = block.model_dump(mode="json", exclude_none=True)
        self.blocks[index] = data
        if block.type == "tool_use":
            self.json_parts[index] = []
            return ToolUseStarted(block.id, block.name)
        return None

    def delta(self, index: int, delta: wire.RawContentBlockDelta) -> TextDelta | None:
        block = self.blocks.get(index)
        if block is None:
            return None
        if delta.type == "text_delta":
            block["text"] = json_str(block.get("text")) + delta.text
            return TextDelta(delta.text) if delta.text else None
        if delta.type == "input_json_delta":
            self.json_parts.setdefault(index, []).append(delta.partial_json)
        elif delta.type == "thinking_delta":
            block["thinking"] = json_str(block.get("thinking")) + delta.thinking
        elif delta.type == "signature_delta":
            block["signature"] = delta.signature
        elif delta.type == "citations_delta":
            citations = block.setdefault("citations", [])
            if isinstance(citations, list):
                citations.append(delta.citation.model_dump(mode="json", exclude_none=True))
        return None

    def stop_block(self, index: int) -> None:
        block = self.blocks.get(index)
        if block is None:
            return
        self.finished[index] = self._finish(index, block)

    def _finish(self, index: int, block: JsonObject) -> Block | None:
        if block["type"] == "tool_use":
            raw = "".join(self.json_parts.get(index, []))
            try:
                tool_input = json.loads(raw) if raw.strip() else {}
            except ValueError:
                return None
            if not isinstance(tool_input, dict):
                return None
            return {"type": "tool_use", "id": block["id"], "name": block["name"], "input": tool_input}
        if block["type"] == "text":
            text = json_str(block.get("text"))
            if not text.strip():
                return None  # the API rejects blank text blocks when they are sent back
            clean: Block = {"type": "text", "text": text}
            if block.get("citations"):
                clean["citations"] = block["citations"]
            return clean
        if block["type"] == "thinking":
            return {"type": "thinking", "thinking": block.get("thinking", ""), "signature": block.get("signature", "")}
        return block

    def message_delta(self, event: wire.RawMessageDeltaEvent) -> None:
        if event.delta.stop_reason is not None:
            self.stop_reason = event.delta.stop_reason
        self._merge_usage(event.usage)

    def response(self) -> ModelResponse:
        content: list[Block] = []
        dropped_tool = False
        for index in sorted(self.blocks):
            block = self.finished.get(index)
            if block is None:
                dropped_tool = dropped_tool or self.blocks[index]["type"] == "tool_use"
                continue
            content.append(block)
        stop_reason = self.stop_reason or "end_turn"
        if dropped_tool and stop_reason != "max_tokens":
            raise ModelError(f"the model sent a malformed tool call (stop reason {stop_reason})")
        return ModelResponse(
            content=content,
            stop_reason=stop_reason,
            usage=Usage.from_dict(self.usage),
            model=self.model,
            id=self.id,
        )


# --- error mapping ----------------------------------------------------------------------------


def _one_line(text: str) -> str:
    """API messages may span lines (JSON bodies): collapse them, then cap."""
    return one_line(" ".join(str(text).split()), MESSAGE_LIMIT)


def _api_message(err: BaseException) -> str:
    message = getattr(err, "api_message", None)
    if not message:
        body = getattr(err, "body", None)
        if isinstance(body, dict):
            inner = body.get("error") if isinstance(body.get("error"), dict) else body
            message = inner.get("message") if isinstance(inner, dict) else None
    return _one_line(message or getattr(err, "message", None) or str(err) or type(err).__name__)


def _error_type(err: BaseException) -> str | None:
    kind = getattr(err, "type", None)
    if isinstance(kind, str):
        return kind
    body = getattr(err, "body", None)
    inner = body.get("error") if isinstance(body, dict) else None
    if isinstance(inner, dict):
        kind = inner.get("type")
        return kind if isinstance(kind, str) else None
    return None


STATUS_WORDS = {
    429: "rate limited",
    500: "server error",
    502: "bad gateway",
    503: "unavailable",
    504: "gateway timeout",
    529: "overloaded",
}


def translate_error(err: BaseException, *, retries: int, base_url: str, mid_stream: bool = False) -> ModelError:
    """An SDK/transport exception as one of memagent's ModelErrors, with a one-line message."""
    sdk = _sdk()
    after = f" after {retries} {'retry' if retries == 1 else 'retries'}" if retries > 0 else ""
    if isinstance(err, ModelError):
        return err
    if isinstance(err, sdk.AuthenticationError):
        return AuthenticationError(f"API key rejected (401): {_api_message(err)}")
    if isinstance(err, sdk.PermissionDeniedError):
        return AuthenticationError(f"API key not permitted (403): {_api_message(err)}")
    if isinstance(err, sdk.APIStatusError):
        return _status_error(err, after=after, mid_stream=mid_stream)
    if isinstance(err, sdk.APITimeoutError):
        return ModelError(f"API request to {base_url} timed out{after}")
    if isinstance(err, sdk.APIConnectionError):
        cause = err.__cause__ or err.__context__
        detail = f": {_one_line(str(cause))}" if cause and str(cause) else ""
        return ModelError(f"cannot reach the API at {base_url}{after}{detail}")
    if mid_stream:
        return StreamInterrupted(f"the response stream broke off: {_one_line(str(err) or type(err).__name__)}")
    if isinstance(err, sdk.CredentialsError) or (isinstance(err, TypeError) and "auth" in str(err).lower()):
        return AuthenticationError(
            "no API credentials: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN for a bearer token)"
        )
    return ModelError(f"API call failed: {type(err).__name__}: {_one_line(str(err))}")


def _status_error(err: anthropic.APIStatusError, *, after: str, mid_stream: bool) -> ModelError:
    status = int(getattr(err, "status_code", 0) or 0)
    message = _api_message(err)
    kind = _error_type(err)
    if status == 413 or (status == 400 and PROMPT_TOO_LONG.search(message)):
        return PromptTooLongError(f"prompt is too long for the model ({status}): {message}")
    if mid_stream and kind:
        return ModelError(f"API error mid-stream ({kind.replace('_error', '').replace('_', ' ')}): {message}")
    if status == 429 or status >= 500:
        word = STATUS_WORDS.get(status) or (kind or "server error").replace("_error", "").replace("_", " ")
        return ModelError(f"API error {status} ({word}){after}: {message}")
    return ModelError(f"API rejected the request ({status} {kind or 'error'}): {message}")


# --- cancelling a stream ---------------------------------------------------------------------

CANCELLED = "the response stream was closed: the call was cancelled"


def _sever(raw_stream: anthropic.Stream[wire.RawMessageStreamEvent]) -> None:
    """Shut the stream's socket for both directions. Closing the response from another thread
    would not wake a read blocked on the socket; a shutdown does, the read sees the end of the
    stream and the reading thread closes the response as it unwinds. A transport without a
    socket of its own stops at the next chunk instead (the reader checks the abort there)."""
    network = raw_stream.response.extensions.get("network_stream")
    sock = network.get_extra_info("socket") if network is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


# --- the model --------------------------------------------------------------------------------


class AnthropicModel:
    """A :class:`~memagent.llm.protocol.ChatModel` backed by the Anthropic Messages API.

    Credentials: ``api_key`` wins over ``auth_token`` (the SDK refuses both at once); with
    neither, the SDK reads ``ANTHROPIC_API_KEY`` then ``ANTHROPIC_AUTH_TOKEN``. ``base_url``
    falls back to ``ANTHROPIC_BASE_URL`` likewise (a proxy, a test server, Ollama...).
    ``max_retries`` is the SDK's own retry count for 408/409/429/5xx and connection errors.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        auth_token: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float = 600,
    ) -> None:
        self.name = model
        self.model = model
        self.max_retries = max_retries
        self.timeout = timeout
        self._api_key = api_key
        self._auth_token = auth_token
        self._base_url = base_url
        self._client: anthropic.Anthropic | None = None
        self._client_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AnthropicModel({self.model!r}, base_url={self.base_url!r})"

    @property
    def base_url(self) -> str:
        if self._client is not None:
            return str(self._client.base_url).rstrip("/")
        return self._base_url or DEFAULT_BASE_URL

    def prepare(self) -> None:
        """Import the SDK and build the client now (safe to call from a background thread)."""
        self._get_client()

    def _get_client(self) -> anthropic.Anthropic:
        with self._client_lock:
            return self._client or self._build_client()

    def _build_client(self) -> anthropic.Anthropic:
        if self._client is None:
            sdk = _sdk()
            credentials: dict[str, str] = {}
            if self._api_key:
                credentials["api_key"] = self._api_key
            elif self._auth_token:
                credentials["auth_token"] = self._auth_token
            # Always explicit: the SDK would otherwise read ANTHROPIC_BASE_URL itself, and only
            # config.py reads the environment (an empty variable there already means "unset").
            base_url = self._base_url or DEFAULT_BASE_URL
            self._client = sdk.Anthropic(
                **credentials, base_url=base_url, max_retries=self.max_retries, timeout=self.timeout
            )
        return self._client

    def count_tokens(self, request: ModelRequest) -> int:
        """The API's exact input token count for ``request`` (``/v1/messages/count_tokens``)."""
        params = build_params(request, self.model)
        params.pop("max_tokens")
        try:
            return int(self._get_client().messages.count_tokens(**params).input_tokens)
        except Exception as exc:
            raise translate_error(exc, retries=self.max_retries, base_url=self.base_url) from None

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        """The response as it streams. ``request.abort`` set from another thread closes the
        connection at once (a read waiting for the next chunk included) and raises
        :class:`StreamInterrupted`; nothing of the response is kept."""
        params = build_params(request, self.model)
        abort = request.abort or Abort()
        if abort.is_set:
            raise StreamInterrupted(CANCELLED)
        try:
            client = self._get_client()
            raw_stream = client.messages.create(**params, stream=True)
        except Exception as exc:  # every SDK failure becomes a ModelError
            raise translate_error(exc, retries=self.max_retries, base_url=self.base_url) from None
        forget = abort.when_set(lambda: _sever(raw_stream))
        try:
            with raw_stream:
                yield from self._consume(raw_stream, abort)
        finally:
            forget()

    def _consume(self, raw_stream: Iterator[wire.RawMessageStreamEvent], abort: Abort) -> Iterator[StreamEvent]:
        acc = _Accumulator()
        try:
            for event in raw_stream:
                if abort.is_set:
                    raise StreamInterrupted(CANCELLED)
                emitted = self._apply(acc, event)
                if emitted is not None:
                    yield emitted
                if acc.stopped:
                    break
        except ModelError:
            raise
        except Exception as exc:
            if abort.is_set:
                raise StreamInterrupted(CANCELLED) from None
            raise translate_error(exc, retries=self.max_retries, base_url=self.base_url, mid_stream=True) from None
        if not acc.stopped:
            raise StreamInterrupted("the response stream ended before the message was complete")
        yield ResponseComplete(acc.response())

    @staticmethod
    def _apply(acc: _Accumulator, event: wire.RawMessageStreamEvent) -> StreamEvent | None:
        if event.type == "message_start":
            acc.start_message(event.message)
        elif event.type == "content_block_start":
            return acc.start_block(event.index, event.content_block)
        elif event.type == "content_block_delta":
            return acc.delta(event.index, event.delta)
        elif event.type == "content_block_stop":
            acc.stop_block(event.index)
        elif event.type == "message_delta":
            acc.message_delta(event)
        elif event.type == "message_stop":
            acc.stopped = True
        return None
