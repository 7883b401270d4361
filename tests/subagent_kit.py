"""A scripted parent that delegates: tell a subagent's requests from its parent's, and a model that
hands one task to a subagent, then answers once the result is back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memagent.llm.scripted import FunctionModel, reply, tool_call
from memagent.llm.types import ModelRequest, ModelResponse


def system_of(request: ModelRequest) -> str:
    return "\n".join(b.get("text", "") for b in request.system)


def is_child(request: ModelRequest) -> bool:
    """A request made by a subagent (its system prompt says so)."""
    return "a subagent of memagent" in system_of(request)


def answered(request: ModelRequest) -> bool:
    """The last message carries tool results: the call before it has been answered."""
    last = request.messages[-1]
    return last["role"] == "user" and any(b.get("type") == "tool_result" for b in last["content"])


def delegating(child: Callable[[ModelRequest], ModelResponse], task: dict[str, Any], final: str) -> FunctionModel:
    """The parent calls ``task`` with ``task`` as input and says ``final`` once it has the result;
    the subagent's requests are answered by ``child``."""

    def answer(request: ModelRequest) -> ModelResponse:
        if is_child(request):
            return child(request)
        return reply(final) if answered(request) else reply(tool_call("task", task))

    return FunctionModel(answer)
