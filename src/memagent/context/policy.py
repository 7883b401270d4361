"""How the loop asks the context layer to fit the history into the window.

The loop only knows this protocol; ``context.compaction`` provides the real policy
(micro-compaction, auto-compaction, attachments for oversized text, recovery from "prompt is too
long").
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Protocol, TypedDict

from memagent.context.conversation import Conversation
from memagent.events import AgentEvent
from memagent.llm.types import Block, Message, Usage


class ContextReport(TypedDict):
    """Where the context's tokens go (``/context``): estimates per part, ``total`` usage-anchored."""

    system: int
    tools: int
    messages: int
    tool_results: int
    memory: int
    total: int
    exact_anchor: bool
    threshold: int
    until_compaction: int
    message_count: int
    elided_tool_results: int
    compactions: int
    estimator: str
    transcript: str


class ContextPolicy(Protocol):
    def view(self, conversation: Conversation) -> list[Message]:
        """The messages to send (e.g. with old tool results elided). Must keep the invariants."""
        ...

    def before_request(self, conversation: Conversation) -> Iterator[AgentEvent]:
        """Compact if needed; yields agent events (notices) about what it did."""
        ...

    def force_compact(self, conversation: Conversation, focus: str | None = None) -> Iterator[AgentEvent]:
        """Compact now (the compact tool, /compact, or a prompt-too-long error)."""
        ...

    def observe(self, usage: Usage, sent: list[Message]) -> None:
        """Learn the exact size of the request that was just answered."""
        ...

    def rewound(self) -> None:
        """The conversation went back to an earlier turn: forget what was learned about the
        history that is gone (when compaction last ran, waits tied to turn numbers)."""
        ...

    def fit(self, blocks: list[Block]) -> tuple[list[Block], list[str]]:
        """A user message's blocks as they may be sent (a text too large for the context becomes
        a preview and a file the model reads), with one note per text set aside."""
        ...

    def recover_too_long(self, conversation: Conversation, attempt: int) -> Generator[AgentEvent, None, bool]:
        """The API answered "prompt is too long" (``attempt``: 1, 2, …): make the context smaller;
        yields notices and returns whether anything changed (a retry is worth it)."""
        ...


@dataclass
class CompactionRequest:
    """The channel from the ``compact`` tool to the policy: asked during a tool round, run by
    the policy before the next model call (never mid round). Both sides get the same object at
    composition, so neither needs the other."""

    pending: bool = False
    focus: str | None = None

    def ask(self, focus: str | None = None) -> None:
        self.pending, self.focus = True, focus or None

    def take(self) -> tuple[bool, str | None]:
        """Whether a compaction was asked for (and its focus); clears the request."""
        asked, focus = self.pending, self.focus
        self.pending, self.focus = False, None
        return asked, focus


class PassThroughContext:
    """No compaction: the history is sent as it is."""

    def view(self, conversation: Conversation) -> list[Message]:
        return conversation.messages

    def before_request(self, conversation: Conversation) -> Iterator[AgentEvent]:
        return iter(())

    def force_compact(self, conversation: Conversation, focus: str | None = None) -> Iterator[AgentEvent]:
        return iter(())

    def observe(self, usage: Usage, sent: list[Message]) -> None:
        return None

    def rewound(self) -> None:
        return None

    def fit(self, blocks: list[Block]) -> tuple[list[Block], list[str]]:
        return blocks, []

    def recover_too_long(self, conversation: Conversation, attempt: int) -> Generator[AgentEvent, None, bool]:
        return False
        yield  # a generator that changes nothing
