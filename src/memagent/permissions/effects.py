"""What a tool call does, as the tool declares it: the vocabulary the gate decides on.

Every tool says what one call of it would do — read, write inside the project, run code, save a
user-scope memory … — possibly depending on the validated input (``memory_save`` with
``scope: user`` saves a user-scope memory; ``write_file`` names the file it writes). Permission
modes and rules read this declaration, never a list of tool names: a new tool is judged by what
it declares, and a tool that declares nothing is taken to run code (it asks).

The gate refines a declaration once it knows the project: a write to a path that configures
what runs later (:mod:`memagent.protected`) becomes :attr:`Effect.WRITE_PROTECTED`, a write
that resolves outside the project :attr:`Effect.WRITE_OUTSIDE`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Effect(str, Enum):
    """One kind of thing a call does. The value is the word shown to the user."""

    READ = "reads"  # reads files or memagent's own state; changes nothing
    SESSION = "changes this session"  # the todo list, the context window: nothing outside the session
    TASKS = "changes the task graph"  # .tasks/ in the project, memagent's own files
    WRITE = "writes in the project"
    WRITE_PROTECTED = "writes a protected path"  # .git/hooks, .memagent.toml … (memagent.protected)
    WRITE_OUTSIDE = "writes outside the project"
    RUN = "runs code"  # a shell command, another program's tool
    NETWORK = "reaches the network"
    MEMORY_SAVE = "saves a project memory"  # project or session scope: stays with this project
    MEMORY_USER = "saves a user memory"  # user scope: shown in every project
    MEMORY_DELETE = "erases a memory"


# What each mode runs without asking (plan mode refuses the rest; bypassPermissions runs all
# but protected writes).
READ_ONLY = frozenset({Effect.READ, Effect.SESSION})
DEFAULT_MODE_RUNS = READ_ONLY | {Effect.TASKS, Effect.MEMORY_SAVE}
ACCEPT_EDITS_RUNS = DEFAULT_MODE_RUNS | {Effect.WRITE}
WRITES = frozenset({Effect.WRITE, Effect.WRITE_PROTECTED, Effect.WRITE_OUTSIDE})


@dataclass(frozen=True)
class Declaration:
    """What one call would do.

    ``paths``: the files it reads or writes, as the call gives them (path rules match them);
    ``command``: the shell command it runs (``Bash(…)`` rules and the dangerous-command guard
    read it); ``note``: a phrase the approval prompt adds (an MCP server's own warning)."""

    effects: frozenset[Effect]
    paths: tuple[str, ...] = ()
    command: str | None = None
    note: str = ""

    @property
    def writes(self) -> bool:
        return bool(self.effects & WRITES)

    @property
    def reads_only(self) -> bool:
        return self.effects <= READ_ONLY

    def describe(self) -> str:
        """``writes in the project, runs code`` — the effects in a fixed order, as words."""
        return ", ".join(effect.value for effect in Effect if effect in self.effects)


def declares(*effects: Effect, paths: tuple[str, ...] = (), command: str | None = None, note: str = "") -> Declaration:
    """A declaration from its effects: ``declares(Effect.READ, paths=("a.py",))``."""
    return Declaration(frozenset(effects), tuple(paths), command, note)


UNDECLARED = declares(Effect.RUN, note="the tool does not say what it does")


@dataclass(frozen=True)
class HookVerdict:
    """A hook's own decision about a call (a ``PreToolUse`` hook): it may refuse the call
    (``deny``), insist that the user is asked (``ask``) or approve it (``allow``, which no deny
    rule, plan mode or protected path yields to)."""

    action: str  # "allow" | "ask" | "deny"
    reason: str = ""
    source: str = field(default="a PreToolUse hook")


__all__ = [
    "ACCEPT_EDITS_RUNS",
    "DEFAULT_MODE_RUNS",
    "Declaration",
    "Effect",
    "HookVerdict",
    "READ_ONLY",
    "UNDECLARED",
    "WRITES",
    "declares",
]
