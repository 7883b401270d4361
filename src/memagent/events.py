"""Events a turn yields (from the loop and the context policy). The REPL and print mode are two
renderers of this stream. A leaf module: it imports nothing of memagent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TurnStarted:
    turn: int


@dataclass(frozen=True)
class WaitingForModel:
    """A model call is about to start (renderers show a spinner until the first delta)."""


@dataclass(frozen=True)
class AssistantText:
    """A streamed piece of the assistant's answer."""

    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    id: str
    name: str
    input: Mapping[str, object]  # the call's input as the model sent it (JSON)
    summary: str = ""


@dataclass(frozen=True)
class ToolProgress:
    """New output of a tool that is still running (bash), as it comes.

    ``text`` is the new piece (not the whole output so far); ``elapsed`` the seconds since the
    call started."""

    id: str
    name: str
    text: str
    elapsed: float = 0.0


@dataclass(frozen=True)
class ToolCallFinished:
    id: str
    name: str
    content: str
    is_error: bool = False
    refused: bool = False  # it never ran: a rule, the mode, a hook or the user refused it


@dataclass(frozen=True)
class ModelAnswered:
    """One model response is complete, before its tool calls run: its content blocks (the
    Messages API's shape), why it stopped, which model answered, its id and token usage."""

    content: Sequence[Mapping[str, object]]
    stop_reason: str
    model: str = ""
    id: str = ""
    usage: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Notice:
    """Something the user should know that is not part of the answer (compaction, retries)."""

    text: str
    level: str = "info"  # info | warning | error


@dataclass(frozen=True)
class TurnEnded:
    stop_reason: str
    final_text: str = ""
    error: str | None = None  # one-line reason when the turn ended on a model error
    usage: dict[str, int] = field(default_factory=dict)


AgentEvent = (
    TurnStarted
    | WaitingForModel
    | AssistantText
    | ToolCallStarted
    | ToolProgress
    | ToolCallFinished
    | ModelAnswered
    | Notice
    | TurnEnded
)
