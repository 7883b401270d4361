"""Offline models for tests: a fixed script, or a function of the request.

Modelled on pydantic-ai's ``FunctionModel`` and mini-swe-agent's ``DeterministicModel``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator

from memagent.jsontypes import JsonObject, json_str
from memagent.llm.types import (
    Block,
    ModelError,
    ModelRequest,
    ModelResponse,
    ResponseComplete,
    StreamEvent,
    TextDelta,
    ToolUseStarted,
    Usage,
)

_ids = itertools.count(1)


def tool_call(name: str, input: JsonObject | None = None, id: str | None = None) -> Block:
    return {"type": "tool_use", "id": id or f"toolu_s{next(_ids):06d}", "name": name, "input": input or {}}


def reply(*parts: str | Block, stop_reason: str | None = None, usage: Usage | None = None) -> ModelResponse:
    """Build a response from text strings and tool_use blocks; stop_reason inferred."""
    content: list[Block] = [{"type": "text", "text": p} if isinstance(p, str) else p for p in parts]
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    return ModelResponse(content=content, stop_reason=stop_reason, usage=usage or Usage(), model="scripted")


def stream_response(response: ModelResponse) -> Iterator[StreamEvent]:
    for block in response.content:
        if block["type"] == "text":
            yield TextDelta(json_str(block.get("text")))
        elif block["type"] == "tool_use":
            yield ToolUseStarted(json_str(block.get("id")), json_str(block.get("name")))
    yield ResponseComplete(response)


class FunctionModel:
    """A model whose answer is ``fn(request)``; the function may raise ModelError."""

    def __init__(self, fn: Callable[[ModelRequest], ModelResponse], name: str = "function-model"):
        self.fn = fn
        self.name = name
        self.requests: list[ModelRequest] = []

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        self.requests.append(request)
        yield from stream_response(self.fn(request))


class ScriptedModel(FunctionModel):
    """Answers with the given responses in order; an Exception in the script is raised."""

    def __init__(self, script: Iterable[ModelResponse | Exception], name: str = "scripted"):
        self._script = list(script)
        super().__init__(self._next, name=name)

    def _next(self, request: ModelRequest) -> ModelResponse:
        if not self._script:
            raise ModelError("scripted model has no more responses")
        item = self._script.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    @property
    def remaining(self) -> int:
        return len(self._script)
