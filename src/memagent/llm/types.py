"""Plain data shared between the loop and model adapters.

Messages are kept in the Messages-API wire shape (``{"role": ..., "content": [blocks]}``) as
plain dicts: that is what goes into the transcript and over the wire, so there is nothing to
convert and nothing to lose. Content is always a list of block dicts, never a bare string.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from memagent.jsontypes import JsonObject, JsonValue, json_str
from memagent.models import MEMAGENT_MAX_TOKENS

Block = JsonObject
"""One content block in the wire shape (``{"type": "text", "text": ...}``, tool_use, tool_result,
image, thinking …): JSON whose fields a reader checks before use (see :mod:`memagent.llm.items`)."""


class Message(TypedDict):
    """One message of the conversation: who spoke, and the blocks they said."""

    role: str
    content: list[Block]


StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "pause_turn"]


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    @property
    def context_tokens(self) -> int:
        """Everything the request put in front of the model: uncached input plus the prompt-cache
        reads and writes, which the API reports apart. The context size compaction is measured by."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object] | None) -> Usage:
        """Usage from a stored or reported mapping; a missing or non-numeric count is 0."""
        data = data or {}
        return cls(**{k: _count(data.get(k)) for k in cls().to_dict()})


def _count(value: object) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, (int, float, str)):
        try:
            return int(value)
        except ValueError:
            return 0
    return 0


class Abort:
    """A model call's off switch, thrown from another thread (a cancelled turn).

    An adapter registers how to stop its own stream with :meth:`when_set` — for a network stream,
    shutting the socket, which wakes a read that is blocked waiting for the next chunk. Once set,
    the adapter raises :class:`StreamInterrupted` and keeps nothing of the response.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set = False
        self._actions: list[Callable[[], None]] = []

    @property
    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        """Stop the call now: every registered action runs once (a failing one is ignored)."""
        with self._lock:
            if self._set:
                return
            self._set = True
            actions, self._actions = self._actions, []
        for action in actions:
            _run_quietly(action)

    def when_set(self, action: Callable[[], None]) -> Callable[[], None]:
        """Run ``action`` when the call is stopped (at once if it already is); returns the
        function that forgets it again (call it when the stream is over)."""
        with self._lock:
            if not self._set:
                self._actions.append(action)
                return lambda: self._forget(action)
        _run_quietly(action)
        return lambda: None

    def _forget(self, action: Callable[[], None]) -> None:
        with self._lock:
            if action in self._actions:
                self._actions.remove(action)


def _run_quietly(action: Callable[[], None]) -> None:
    try:
        action()
    except Exception:  # stopping a stream must never fail the cancel that asked for it
        pass


@dataclass
class ModelRequest:
    system: list[Block]
    messages: list[Message]
    tools: list[JsonObject] = field(default_factory=list)
    max_tokens: int = MEMAGENT_MAX_TOKENS
    model: str | None = None  # None: the adapter's default
    # set from another thread to stop the call while it streams (the adapter honours it)
    abort: Abort | None = field(default=None, compare=False, repr=False)


@dataclass
class ModelResponse:
    content: list[Block]
    stop_reason: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    id: str = ""

    def text(self) -> str:
        return "".join(json_str(b.get("text")) for b in self.content if b.get("type") == "text")

    def tool_uses(self) -> list[Block]:
        return [b for b in self.content if b.get("type") == "tool_use"]


# --- streaming events a ChatModel yields, ending with exactly one ResponseComplete ---


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolUseStarted:
    id: str
    name: str


@dataclass(frozen=True)
class ResponseComplete:
    response: ModelResponse


StreamEvent = TextDelta | ToolUseStarted | ResponseComplete


# --- errors: adapters translate SDK errors into these so the core never sees the SDK ---


class ModelError(Exception):
    """A model call failed after the SDK's own retries. ``str()`` is a one-line reason."""


class PromptTooLongError(ModelError):
    """The request exceeded the model's context window; compact and retry once."""


class AuthenticationError(ModelError):
    """The key was rejected or missing."""


class StreamInterrupted(ModelError):
    """The connection dropped mid-stream; no partial message is kept."""


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def user_message(text: str) -> Message:
    return {"role": "user", "content": [text_block(text)]}


def tool_result_text(content: object) -> str:
    """The text of a tool_result's content: a string, or the text blocks of a list joined by
    newlines (images and other blocks contribute nothing). The one reader of tool-result text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def tool_result_block(
    tool_use_id: str, content: str, is_error: bool = False, images: list[Block] | None = None
) -> Block:
    """A tool_result; with ``images`` (image blocks) its content is a list: the text, then them."""
    body: JsonValue = content or "(no output)"
    if images:
        body = [*([text_block(content)] if content else []), *images]
    block: Block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": body}
    if is_error:
        block["is_error"] = True
    return block
