"""Claude Code's settings files, read beside memagent's own.

Three files, from the least to the most specific (Claude Code's precedence):

- ``~/.claude/settings.json`` — the user's own (trusted, like ``$MEMAGENT_HOME/config.toml``);
- ``<project>/.claude/settings.json`` — the project's, shared through git;
- ``<project>/.claude/settings.local.json`` — the project's, the user's private copy.

What memagent takes from them (everything else in them is ignored quietly):

- ``permissions``: ``allow``, ``ask``, ``deny`` (rules, e.g. ``Bash(npm run test:*)``,
  ``Read(./.env)``, ``Edit(src/**)``, ``mcp__github``), ``defaultMode`` and
  ``additionalDirectories``. Rules of every file apply together (deny wins over ask, ask over
  allow); ``defaultMode`` is the most specific file's. Each rule keeps the file it came from, for
  ``memagent doctor`` and ``/permissions``. A rule memagent cannot read is one notice, not a
  failure.
- ``hooks``: Claude Code's hooks table (see :mod:`memagent.features.hooks`); every file's hooks
  run, the user's first.
- ``env``: variables set for the session's commands, hooks and MCP servers (a more specific file
  wins for the same name).

A repository is untrusted input: from the project's two files, what only *narrows* is always
applied — ``deny`` and ``ask`` rules, and a ``defaultMode`` of ``default`` or ``plan`` — while
what widens power (``allow`` rules, a ``defaultMode`` of ``acceptEdits`` or ``bypassPermissions``,
``additionalDirectories``, ``hooks``, ``env``) waits until the user trusts the project (trust is
pinned to each file's content: a changed file asks again), with one notice naming what waits.
A file that is not valid JSON is one notice and is skipped; a file that is a symlink leading out
of its folder is not read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memagent.config import HooksSettings
from memagent.jsontypes import JsonObject, JsonValue, json_object
from memagent.paths import ProjectPaths

NARROWING_MODES = ("default", "plan")
WIDENING_KEYS = ("allow", "defaultMode", "additionalDirectories", "hooks", "env")
PROJECT_FILES = (".claude/settings.json", ".claude/settings.local.json")
CLAUDE_NOT_TRUSTED = "this project is not trusted (run `memagent trust` in it to allow them)"


@dataclass(frozen=True)
class SettingsFile:
    """One Claude Code settings file as read (``data`` is {} when it is missing or unreadable)."""

    path: Path
    label: str  # how it is named to the user: ``~/.claude/settings.json``, ``.claude/settings.json``
    scope: str  # user | project | local
    data: JsonObject = field(default_factory=dict)

    @property
    def from_project(self) -> bool:
        return self.scope != "user"


@dataclass(frozen=True)
class SourcedRule:
    rule: str
    source: str  # the label of the file it came from


@dataclass
class ClaudeSettings:
    """What memagent uses from Claude Code's settings files, with where each piece came from."""

    files: list[SettingsFile] = field(default_factory=list)
    allow: list[SourcedRule] = field(default_factory=list)
    ask: list[SourcedRule] = field(default_factory=list)
    deny: list[SourcedRule] = field(default_factory=list)
    default_mode: tuple[str, str] | None = None  # (mode, source)
    additional_directories: list[tuple[Path, str]] = field(default_factory=list)
    hooks: HooksSettings = field(default_factory=HooksSettings)
    env: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def rules_by_source(self) -> dict[str, dict[str, list[str]]]:
        """``{label: {"allow": [...], "ask": [...], "deny": [...]}}``, in file order."""
        found: dict[str, dict[str, list[str]]] = {}
        for kind in ("allow", "ask", "deny"):
            for item in getattr(self, kind):
                found.setdefault(item.source, {"allow": [], "ask": [], "deny": []})[kind].append(item.rule)
        return found

    @property
    def empty(self) -> bool:
        return not (
            self.allow
            or self.ask
            or self.deny
            or self.default_mode
            or self.additional_directories
            or not self.hooks.empty
            or self.env
        )


def settings_files(paths: ProjectPaths) -> list[tuple[Path, str, str]]:
    """(path, label, scope) of the three files, least specific first."""
    return [
        (paths.claude_home / "settings.json", "~/.claude/settings.json", "user"),
        (paths.root / ".claude" / "settings.json", ".claude/settings.json", "project"),
        (paths.root / ".claude" / "settings.local.json", ".claude/settings.local.json", "local"),
    ]


def _inside(path: Path, folder: Path) -> bool:
    real, base = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    return real == base or base in real.parents


def read_file(path: Path, label: str, scope: str, base: Path, notes: list[str]) -> SettingsFile:
    """One file; problems become notes (never an exception)."""
    if not path.exists():
        return SettingsFile(path, label, scope)
    if not _inside(path, base):
        notes.append(f"{label} is a symlink leading outside {base}; not read")
        return SettingsFile(path, label, scope)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        notes.append(f"{label} cannot be read ({getattr(exc, 'strerror', None) or exc}); ignored")
        return SettingsFile(path, label, scope)
    except json.JSONDecodeError as exc:
        notes.append(f"{label} is not valid JSON ({exc.msg}, line {exc.lineno}); ignored")
        return SettingsFile(path, label, scope)
    if not isinstance(data, dict):
        notes.append(f"{label} is not a JSON object; ignored")
        return SettingsFile(path, label, scope)
    return SettingsFile(path, label, scope, data)


def _strings(value: JsonValue, where: str, notes: list[str]) -> list[str]:
    if value is None:
        return []
    strings = [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
    if not isinstance(value, list) or len(strings) != len(value):
        notes.append(f"{where} is not a list of strings; ignored")
        return []
    return [v.strip() for v in strings if v.strip()]


def _withheld(file: SettingsFile) -> list[str]:
    """The widening keys a project file sets (what waits for trust)."""
    permissions = json_object(file.data.get("permissions"))
    asked = [key for key in ("allow", "additionalDirectories") if permissions.get(key)]
    mode = permissions.get("defaultMode")
    if isinstance(mode, str) and mode not in NARROWING_MODES:
        asked.append("defaultMode")
    asked += [key for key in ("hooks", "env") if file.data.get(key)]
    return [key for key in WIDENING_KEYS if key in asked]


def _take_permissions(
    file: SettingsFile, found: ClaudeSettings, widen: bool, check_rule: Callable[[str], str | None]
) -> None:
    permissions = file.data.get("permissions")
    if permissions is None:
        return
    if not isinstance(permissions, dict):
        found.notes.append(f"{file.label}: permissions is not an object; ignored")
        return
    for kind in ("deny", "ask", "allow"):
        if kind == "allow" and not widen:
            continue
        for rule in _strings(permissions.get(kind), f"{file.label}: permissions.{kind}", found.notes):
            problem = check_rule(rule)
            if problem:
                found.notes.append(f"{file.label}: permissions.{kind}: {problem}; that rule is ignored")
            else:
                getattr(found, kind).append(SourcedRule(rule, file.label))
    mode = permissions.get("defaultMode")
    if isinstance(mode, str) and (widen or mode in NARROWING_MODES):
        found.default_mode = (mode, file.label)
    if widen:
        for raw in _strings(
            permissions.get("additionalDirectories"), f"{file.label}: additionalDirectories", found.notes
        ):
            found.additional_directories.append((Path(raw).expanduser(), file.label))


def _take_hooks_and_env(file: SettingsFile, found: ClaudeSettings) -> None:
    hooks = file.data.get("hooks")
    if hooks is not None:
        origin = "user" if file.scope == "user" else "project"
        found.hooks = found.hooks.merged(HooksSettings.from_file(hooks, origin=origin, source=file.label))
    env = file.data.get("env")
    if env is not None:
        if isinstance(env, dict) and all(isinstance(v, (str, int, float, bool)) for v in env.values()):
            found.env.update({str(k): str(v) for k, v in env.items()})
        else:
            found.notes.append(f"{file.label}: env is not an object of strings; ignored")


def project_widening(paths: ProjectPaths) -> list[tuple[str, list[str]]]:
    """What the project's two files ask for that widens power: ``[(label, keys)]`` (for the
    question "trust this project?")."""
    notes: list[str] = []
    found = []
    for path, label, scope in settings_files(paths):
        if scope == "user":
            continue
        keys = _withheld(read_file(path, label, scope, paths.root / ".claude", notes))
        if keys:
            found.append((label, keys))
    return found


def read_claude_settings(
    paths: ProjectPaths,
    *,
    trusted: Callable[[str], bool],
    why_not: Callable[[str], str] = lambda label: CLAUDE_NOT_TRUSTED,
    check_rule: Callable[[str], str | None] = lambda rule: None,
) -> ClaudeSettings:
    """The three files, merged. ``trusted(label)``: may this project file widen power (the user
    trusts the project, and the file is as it was then — :func:`memagent.trust.trusted_as_now`)?
    ``why_not(label)``: the reason, for the notice, when it may not. ``check_rule(rule)``: why a
    rule cannot be used, or None."""
    found = ClaudeSettings()
    for path, label, scope in settings_files(paths):
        base = paths.claude_home if scope == "user" else paths.root / ".claude"
        file = read_file(path, label, scope, base, found.notes)
        found.files.append(file)
        if not file.data:
            continue
        widen = not file.from_project or trusted(label)
        withheld = [] if widen else _withheld(file)
        if withheld:
            found.notes.append(f"{label} asks for {', '.join(withheld)}; ignored because {why_not(label)}")
        _take_permissions(file, found, widen, check_rule)
        if widen:
            _take_hooks_and_env(file, found)
    return found


__all__ = [
    "CLAUDE_NOT_TRUSTED",
    "ClaudeSettings",
    "NARROWING_MODES",
    "PROJECT_FILES",
    "SettingsFile",
    "SourcedRule",
    "project_widening",
    "read_claude_settings",
    "settings_files",
]
