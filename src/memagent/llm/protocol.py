from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from memagent.llm.types import ModelRequest, StreamEvent


@runtime_checkable
class ChatModel(Protocol):
    """Anything that can answer a request as a stream of events.

    ``stream`` yields :class:`TextDelta` / :class:`ToolUseStarted` as they arrive and ends with
    exactly one :class:`ResponseComplete`. Failures raise :class:`ModelError` subclasses.
    """

    name: str

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]: ...
