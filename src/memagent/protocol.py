"""The session protocol: what a front end asks of a session, and what it is told.

A front end (the REPL, the headless runner, a test driver) never reaches inside a session. It
sends operations with :meth:`memagent.runtime.Session.submit` and reads the events the session
emits with :meth:`memagent.runtime.Session.events`; ``Session.status()`` is the typed read-only
view for a status line. A question for the user — "may this tool run?" — is an event too
(:class:`ApprovalRequested`), answered with an :class:`AnswerApproval` operation on the same
session before the turn goes on. Near a leaf: it imports only :mod:`memagent.events` and the JSON
types (a tool call's input is JSON as the model sent it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from memagent.events import AgentEvent
from memagent.jsontypes import JsonObject

Decision = Literal["allow", "always", "deny"]
DECISIONS: tuple[str, ...] = ("allow", "always", "deny")


# ---- operations: front end → session -------------------------------------------------------


@dataclass(frozen=True)
class Submit:
    """Start a turn with the user's message (one turn at a time)."""

    text: str


@dataclass(frozen=True)
class Cancel:
    """Stop the running turn, as Ctrl-C does; a question still open is answered "deny"."""


@dataclass(frozen=True)
class Compact:
    """Summarise the conversation now (between turns), optionally with a focus."""

    focus: str | None = None


@dataclass(frozen=True)
class SetModel:
    """Use another model for the main conversation from the next request on."""

    model: str


@dataclass(frozen=True)
class SetPermissionMode:
    """Switch the permission mode (default, acceptEdits, plan, bypassPermissions)."""

    mode: str


@dataclass(frozen=True)
class Rewind:
    """Go back to the start of user turn ``turn`` (1-based): files, conversation or both."""

    turn: int
    code: bool = True
    conversation: bool = True
    forget: tuple[str, ...] = ()


@dataclass(frozen=True)
class AnswerApproval:
    """The user's answer to the :class:`ApprovalRequested` with the same ``id``."""

    id: str
    decision: Decision


Op = Submit | Cancel | Compact | SetModel | SetPermissionMode | Rewind | AnswerApproval


# ---- events: session → front end (besides the turn's own AgentEvents) ------------------------


@dataclass(frozen=True)
class ApprovalRequested:
    """A tool call waits for the user's word. ``asker`` names the subagent that asks ("" for the
    session's own agent); ``reason`` is why the permission gate asks; ``rule`` is what an
    "always" answer would approve from then on."""

    id: str
    tool: str
    summary: str
    reason: str = ""
    input: JsonObject = field(default_factory=dict)
    asker: str = ""
    rule: str | None = None  # the allow rule an "always" answer saves (None: no rule names just this call)


@dataclass(frozen=True)
class OpCompleted:
    """An operation other than Submit was carried out; ``text`` says what changed."""

    op: Op
    text: str = ""


@dataclass(frozen=True)
class OpRejected:
    """An operation could not be carried out (nothing changed); ``error`` is one line."""

    op: Op
    error: str


SessionEvent = AgentEvent | ApprovalRequested | OpCompleted | OpRejected


@dataclass(frozen=True)
class SessionStatus:
    """What a status line shows, read in one go."""

    session_id: str
    model: str
    permission_mode: str
    context_tokens: int  # what the next request carries, as the context policy measures it
    compaction_threshold: int  # 0: no automatic compaction
    cost: float | None  # estimated dollars so far (None: a model without a price)
    turns: int
    busy: bool  # a turn is running
    can_compact: bool = True  # the session has a context policy that compacts


@dataclass(frozen=True)
class PermissionsView:
    """The permission gate as ``/permissions`` shows it."""

    mode: str
    rules: tuple[str, ...]  # one line per rule and its origin
    asks_for: tuple[str, ...]  # what a call does that makes the gate ask (in the current mode)
    mode_source: str = ""  # which settings file set the mode, when one did


__all__ = [
    "DECISIONS",
    "AnswerApproval",
    "ApprovalRequested",
    "Cancel",
    "Compact",
    "Decision",
    "Op",
    "OpCompleted",
    "OpRejected",
    "PermissionsView",
    "Rewind",
    "SessionEvent",
    "SessionStatus",
    "SetModel",
    "SetPermissionMode",
    "Submit",
]
