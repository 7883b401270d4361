"""The shape every capability plugs into: a :class:`Feature`.

A feature is one module that brings its own tools, its stable system-prompt text, its per-turn
context and its reactions to the session's lifecycle. The loop and the context policy call the
hooks below in a fixed order over the session's feature list; they never know what a feature
does. Adding a capability is one new feature module plus one line in the runtime's composition.

Hooks, in the order a session meets them:

- ``tools()``: the tools it adds (asked once, at composition; order is kept so the cached
  prompt prefix stays byte-stable).
- ``guidance()``: how to use the feature's tools, a paragraph of memagent's own prompt (left out
  with it when ``--system-prompt`` or a subagent's definition replaces it). Asked once.
- ``system_text()``: stable text for the system prompt (instructions, skill index, profile).
  Asked once per session; it must not change between turns.
- ``check_prompt(text)``: before a user message joins the conversation; a returned string
  refuses the prompt with that reason (a ``UserPromptSubmit`` hook that blocks).
- ``turn_started(number)``: a user turn (1-based, as the session counts them) is about to
  begin: nothing of it has run yet (the working-tree checkpoint).
- ``turn_context(turn)``: an :class:`~memagent.llm.items.Injected` text for the newest user
  message (relevant memories, continuity), its kind given by the feature.
- ``check_tool(call)``: before a tool runs (after validation, before the gate decides); a
  returned string refuses the call with that reason, a
  :class:`~memagent.permissions.HookVerdict` refuses, asks or approves (``PreToolUse``). The
  gate weighs it with the rules and the mode: an approval never overrides a deny rule, plan
  mode or a protected path.
- ``after_tool(call, outcome)``: a tool has run (``PostToolUse``).
- ``after_tools(names)``: after a round of tool calls; an injected text appended after the tool results
  (the todo nudge).
- ``after_response(response)``: each model response (citation tracking).
- ``continue_turn(text)``: the model ended its turn with ``text``; a returned injected text makes it go
  on, with that string as the next user message (a ``Stop`` hook that blocks). Bounded per turn.
- ``halt_reason()``: asked between rounds; a returned string ends the turn at once, with that
  reason shown to the user (a hook's ``continue: false``).
- ``after_turn(conversation)``: a user turn is over (periodic memory extraction).
- ``reinject()``: state re-injected verbatim after a compaction, from the feature's own store.
- ``before_drop(messages, ids)``: a compaction is about to drop these messages.
- ``restore(records)``: the transcript records in effect of the conversation this one continues
  (a resumed session's, as the session opens) or goes back to (after a rewind to the start of an
  earlier turn), from which a feature restores the state it records (the todo list) and records
  it again in this transcript. A feature reads only the record kinds it declares.
- ``close()``: the session ends.

Besides the hooks, a feature names the settings it reads in ``settings_model`` (its pydantic
sub-model of :mod:`memagent.feature_settings`, which ``config.Settings`` composes; the feature is
given that and nothing wider), declares the transcript record kinds it writes in the class attribute
``record_kinds`` (the conversation refuses any other kind; the core's own are
:data:`memagent.context.transcript.RECORD_TYPES`), and it may declare the REPL's slash commands that are its own (``/todos``,
``/bashes``, ``/mcp`` …) in the class attribute ``slash_commands``: each a :class:`SlashCommand`
(name, usage, help, the text shown when the session has no such feature, and a function of the
feature and a :class:`SlashInput` returning a :class:`SlashReply`). They are known from the class,
so ``/help`` lists them before a session is open; the front end runs one on the session's instance
and renders its reply. A command never sees the terminal.

And one question asked when a subagent is built (:mod:`memagent.features.subagents`):

- ``for_subagent(child)``: what of this feature the subagent gets — ``self`` (shared: stateless
  text and tools bound to a shared store), a new instance of its own (its todo list), or None
  (nothing: the default).

:class:`BaseFeature` implements every hook as a no-op, so a feature overrides only what it uses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from memagent.context.conversation import Conversation
from memagent.context.policy import CompactionRequest
from memagent.jsontypes import JsonObject
from memagent.llm.items import Injected
from memagent.llm.types import Message, ModelResponse
from memagent.permissions import HookVerdict
from memagent.tools.base import RegisteredTool, ToolOutcome


@dataclass(frozen=True)
class TurnInput:
    """What a feature sees when it adds context to a new user message."""

    text: str
    messages: Sequence[Message] = field(default_factory=tuple)


@dataclass(frozen=True)
class ToolCall:
    """A validated tool call about to run, or that has run."""

    id: str
    name: str
    input: JsonObject
    tool: RegisteredTool | None = None  # the tool called (its Claude Code name and input view, for hooks)


@dataclass(frozen=True)
class SubagentContext:
    """What a feature may use to give a subagent its own part (see ``for_subagent``)."""

    name: str  # the subagent's type, e.g. "Explore"
    session_id: str  # the subagent's own session (its transcript)
    record: Callable[[JsonObject], None]  # writes a record to the subagent's transcript
    compaction_requests: CompactionRequest  # the subagent's compact tool and context policy share it
    depth: int  # 1 for a subagent of the session's agent, 2 for a subagent of that one, …
    spawn: Any = None  # builds the subagent's own children (the agent factory), when it may have any


F = TypeVar("F")


@dataclass(frozen=True)
class SlashInput:
    """What a feature's slash command is given: the text after its name, stripped."""

    argument: str = ""


@dataclass(frozen=True)
class SlashReply:
    """What a feature's slash command answers: text for the front end to show (``error``: it
    failed or was used wrongly, shown as an error)."""

    text: str
    error: bool = False


@dataclass(frozen=True)
class SlashCommand(Generic[F]):
    """A REPL command a feature owns: ``/name`` runs ``run(feature, SlashInput)``."""

    name: str  # without the slash
    usage: str  # e.g. "/bashes [kill ID]"
    help: str  # one line for /help
    run: Callable[[F, SlashInput], SlashReply]
    absent: str  # the reply when the session has no such feature (it is off, or not configured)


@runtime_checkable
class Feature(Protocol):
    name: str
    record_kinds: ClassVar[tuple[str, ...]]

    def tools(self) -> Sequence[RegisteredTool]: ...

    def guidance(self) -> str | None: ...

    def system_text(self) -> str | None: ...

    def check_prompt(self, text: str) -> str | None: ...

    def turn_started(self, number: int) -> None: ...

    def turn_context(self, turn: TurnInput) -> Injected | None: ...

    def check_tool(self, call: ToolCall) -> str | HookVerdict | None: ...

    def after_tool(self, call: ToolCall, outcome: ToolOutcome) -> None: ...

    def after_tools(self, names: list[str]) -> Injected | None: ...

    def after_response(self, response: ModelResponse) -> None: ...

    def continue_turn(self, text: str) -> Injected | None: ...

    def halt_reason(self) -> str | None: ...

    def after_turn(self, conversation: Conversation) -> None: ...

    def reinject(self) -> str | None: ...

    def before_drop(self, messages: list[Message], ids: list[str]) -> None: ...

    def restore(self, records: Sequence[JsonObject]) -> None: ...

    def close(self) -> None: ...

    def for_subagent(self, child: SubagentContext) -> Feature | None: ...


class BaseFeature:
    """No-op defaults for every hook of :class:`Feature`."""

    name = "feature"
    record_kinds: ClassVar[tuple[str, ...]] = ()
    settings_model: ClassVar[type[BaseModel] | None] = None
    slash_commands: ClassVar[tuple[SlashCommand[Any], ...]] = ()

    def tools(self) -> Sequence[RegisteredTool]:
        return []

    def guidance(self) -> str | None:
        return None

    def system_text(self) -> str | None:
        return None

    def check_prompt(self, text: str) -> str | None:
        return None

    def turn_started(self, number: int) -> None:
        return None

    def turn_context(self, turn: TurnInput) -> Injected | None:
        return None

    def check_tool(self, call: ToolCall) -> str | HookVerdict | None:
        return None

    def after_tool(self, call: ToolCall, outcome: ToolOutcome) -> None:
        return None

    def after_tools(self, names: list[str]) -> Injected | None:
        return None

    def after_response(self, response: ModelResponse) -> None:
        return None

    def continue_turn(self, text: str) -> Injected | None:
        return None

    def halt_reason(self) -> str | None:
        return None

    def after_turn(self, conversation: Conversation) -> None:
        return None

    def reinject(self) -> str | None:
        return None

    def before_drop(self, messages: list[Message], ids: list[str]) -> None:
        return None

    def restore(self, records: Sequence[JsonObject]) -> None:
        return None

    def close(self) -> None:
        return None

    def for_subagent(self, child: SubagentContext) -> Feature | None:
        return None


__all__ = [
    "BaseFeature",
    "Feature",
    "SlashCommand",
    "SlashInput",
    "SlashReply",
    "SubagentContext",
    "ToolCall",
    "TurnInput",
]
