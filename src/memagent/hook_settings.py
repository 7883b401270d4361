"""The typed ``hooks`` setting: shell commands run at points of a session's life.

In TOML::

    [[hooks.PreToolUse]]
    matcher = "Bash|Edit"              # tool names (Claude Code's or memagent's), or a regex
    command = "python3 .hooks/check.py"
    timeout = 30                       # seconds (default 60)

Claude Code's nested shape (``{"matcher": …, "hooks": [{"type": "command", "command": …}]}``), as
in its settings.json, is accepted too. What a hook receives and how it decides:
:mod:`memagent.features.hooks`. Nothing in a hooks table stops memagent from starting: an unknown
event, an unknown field or a hook it cannot run is one notice (``HooksSettings.notes``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

# Every event Claude Code documents; the ones memagent runs are in memagent.features.hooks.
HOOK_EVENTS = (
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification", "UserPromptSubmit",
    "UserPromptExpansion", "SessionStart", "SessionEnd", "Stop", "StopFailure", "SubagentStart", "SubagentStop",
    "PreCompact", "PostCompact", "PermissionRequest", "PermissionDenied", "Setup", "TeammateIdle", "TaskCreated",
    "TaskCompleted", "Elicitation", "ElicitationResult", "ConfigChange", "WorktreeCreate", "WorktreeRemove",
    "InstructionsLoaded", "CwdChanged", "FileChanged", "MessageDisplay",
)  # fmt: skip
_HOOK_FIELDS = {"type", "command", "matcher", "timeout", "async", "once", "if", "statusMessage", "shell"}


class HookCommand(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    command: str = Field(min_length=1, description="Run with the shell in the project root; JSON event on stdin.")
    matcher: str = Field("", description="Which calls: tool names (a|b) or a regex; empty or '*' matches all.")
    timeout: float = Field(60.0, gt=0, le=3600, description="Seconds before the hook is stopped.")
    run_async: bool = Field(False, alias="async", description="Run in the background; it cannot block anything.")
    condition: str | None = Field(None, alias="if", description="A permission rule the call must match (tool events).")
    once: bool = Field(False, description="Run at most once per session.")
    origin: str = Field(
        "user", description="Where it was configured: user or project (project hooks are gated by trust)."
    )
    source: str = Field("", description="The file it came from, for doctor and warnings.")


def _hook_entries(event: str, entries: object, notes: list[str]) -> list[dict[str, object]]:
    """Claude Code's ``{"matcher", "hooks": [{"type": "command", ...}]}`` and the flat shape, as
    flat command dicts; what cannot run becomes a note."""
    if not isinstance(entries, (list, tuple)):
        notes.append(f"hooks.{event} is not a list of hooks; ignored")
        return []
    flat: list[dict[str, object]] = []
    for entry in entries:
        if isinstance(entry, HookCommand):
            flat.append(entry.model_dump(by_alias=True))
            continue
        if not isinstance(entry, dict):
            notes.append(f"hooks.{event}: an entry that is not a table; ignored")
            continue
        nested = entry.get("hooks")
        inner = nested if isinstance(nested, list) else [entry]
        for hook in inner:
            if not isinstance(hook, dict):
                notes.append(f"hooks.{event}: an entry that is not a table; ignored")
                continue
            # where a hook came from is stamped by whoever read the file, never taken from it
            merged: dict[str, object] = {
                "matcher": entry.get("matcher", ""),
                **{k: v for k, v in hook.items() if k not in ("hooks", "origin", "source")},
            }
            kind = merged.get("type", "command")
            if kind != "command":
                notes.append(f"hooks.{event}: hooks of type {kind!r} are not supported by memagent; skipped")
                continue
            unknown = sorted(set(merged) - _HOOK_FIELDS)
            if unknown:
                notes.append(f"hooks.{event}: field{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} ignored")
            flat.append(merged)
    return flat


class HooksSettings(BaseModel):
    """Hook commands by event name, each list run in order, and the notices about what in the
    configuration was ignored (an unknown event or field, a hook type memagent cannot run)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    events: dict[str, tuple[HookCommand, ...]] = Field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _by_event(cls, data: object) -> object:
        if not isinstance(data, dict) or set(data) <= {"events", "notes"}:
            return data
        events: dict[str, list[HookCommand]] = {}
        notes: list[str] = []
        for key, entries in data.items():
            if key not in HOOK_EVENTS:
                notes.append(f"unknown hook event {key!r} ignored")
                continue
            valid: list[HookCommand] = []
            for raw in _hook_entries(key, entries, notes):
                try:
                    valid.append(HookCommand.model_validate(raw))
                except ValidationError as exc:
                    problem = exc.errors()[0]
                    where = ".".join(str(p) for p in problem.get("loc", ())) or "hook"
                    notes.append(f"hooks.{key}: a hook with a bad {where} ({problem.get('msg', 'invalid')}); skipped")
            if valid:
                events[key] = valid
        return {"events": events, "notes": notes}

    @classmethod
    def from_file(cls, data: object, *, origin: str, source: str) -> HooksSettings:
        """A hooks table read from one file, every hook stamped with where it came from
        (``origin``: user or project; ``source``: the file, for messages)."""
        parsed = data if isinstance(data, HooksSettings) else cls.model_validate(data if isinstance(data, dict) else {})
        events = {
            event: tuple(hook.model_copy(update={"origin": origin, "source": source}) for hook in hooks)
            for event, hooks in parsed.events.items()
        }
        notes = tuple(f"{source}: {note}" for note in parsed.notes)
        if data is not None and not isinstance(data, (dict, HooksSettings)):
            notes += (f"{source}: hooks is not a table; ignored",)
        return cls(events=events, notes=notes)

    def for_event(self, event: str) -> tuple[HookCommand, ...]:
        return tuple(self.events.get(event, ()))

    def merged(self, other: HooksSettings) -> HooksSettings:
        """This configuration's hooks, then ``other``'s, event by event (both run)."""
        events = {e: self.for_event(e) + other.for_event(e) for e in {*self.events, *other.events}}
        return HooksSettings(events=events, notes=self.notes + other.notes)

    @property
    def empty(self) -> bool:
        return not any(self.events.values())
