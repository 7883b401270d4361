"""The typed ``hooks`` setting: shell commands run at points of a session's life.

In a settings file (``$MEMAGENT_HOME/config.toml`` or the project's ``.memagent.toml``)::

    [[hooks.PreToolUse]]
    matcher = "bash|write_file"        # optional regex on the tool name; empty or "*" = all
    command = "python3 .hooks/check.py"
    timeout = 30                       # seconds (default 60)

    [[hooks.Stop]]
    command = "notify-send 'memagent is done'"

Events: ``SessionStart``, ``UserPromptSubmit``, ``PreToolUse``, ``PostToolUse``, ``PreCompact``,
``Stop``. The nested shape Claude Code uses (``{"matcher": …, "hooks": [{"type": "command",
"command": …, "timeout": …}]}``) is accepted too, and a matcher written with Claude Code's tool
names (``Bash``, ``Write``, ``Edit``, ``Read``…) matches memagent's equivalents.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "Stop")


class HookCommand(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str = Field(min_length=1, description="Run with the shell in the project root; JSON event on stdin.")
    matcher: str = Field("", description="Tool-name regex for PreToolUse/PostToolUse; empty or '*' matches all.")
    timeout: float = Field(60.0, gt=0, le=3600, description="Seconds before the hook is stopped.")


def _flatten(entries: Any) -> Any:
    """Claude Code's ``{"matcher", "hooks": [{"type": "command", ...}]}`` into flat commands."""
    if not isinstance(entries, list):
        return entries
    flat: list[Any] = []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("hooks"), list):
            for inner in entry["hooks"]:
                if isinstance(inner, dict):
                    inner = {k: v for k, v in inner.items() if k != "type"}
                    flat.append({"matcher": entry.get("matcher", ""), **inner})
                else:
                    flat.append(inner)
        else:
            flat.append(entry)
    return flat


class HooksSettings(BaseModel):
    """Hook commands by event name, each list run in order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    SessionStart: tuple[HookCommand, ...] = ()
    UserPromptSubmit: tuple[HookCommand, ...] = ()
    PreToolUse: tuple[HookCommand, ...] = ()
    PostToolUse: tuple[HookCommand, ...] = ()
    PreCompact: tuple[HookCommand, ...] = ()
    Stop: tuple[HookCommand, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _accept_nested(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {key: _flatten(value) for key, value in data.items()}
        return data

    def for_event(self, event: str) -> tuple[HookCommand, ...]:
        return tuple(getattr(self, event, ()))

    @property
    def empty(self) -> bool:
        return not any(self.for_event(event) for event in EVENTS)


__all__ = ["EVENTS", "HookCommand", "HooksSettings"]
