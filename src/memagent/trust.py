"""Which projects the user trusts — pinned to what was trusted — and the rules saved for each.

A cloned repository is untrusted input: its power files (:data:`memagent.protected.POWER_FILES`:
``.memagent.toml``, ``.mcp.json``, ``.claude/settings.json``, ``.claude/settings.local.json``)
may not widen what memagent does (approve its own commands, add allow rules or hooks, start MCP
servers, send memory to a server, turn the sandbox off) until the user trusts the project, with
``memagent trust`` or the REPL's prompt.

Trust is pinned to content, not to a path: trusting records the sha256 of each power file (an
absent file is a state too) and, for a small text file (≤ 64 KiB), its text, redacted, to show
what changed later. A power file that changed since — an edit, a sandboxed command, a ``git
pull`` — is no longer trusted: the next session ignores what it widens (the REPL asks again,
showing the diff). Each file counts on its own: :func:`trusted_as_now` answers "is this file
trusted as it is now?", the one question every reader of a power file asks. The tool list of
each MCP server is pinned the same way (a digest, recorded the first time the trusted server is
seen, checked every session after).

The record lives in ``$MEMAGENT_HOME/projects.json`` (user-owned, 0600), keyed by the project's
resolved absolute root, never in the project itself, so a repository cannot trust itself. The
same file keeps the rules saved by the REPL's "always" answer; they are the user's own decisions.

Format::

    {"version": 1,
     "projects": {"/home/me/app": {
        "trusted": true, "since": "2026-11-22T17:00:00+00:00",
        "pins": {".memagent.toml": {"sha256": "9f2c…", "text": "model = …"},
                 ".mcp.json": {"sha256": null}},
        "declined_changes": {".mcp.json": "77ab…"},
        "mcp_tools": {"github": "e3b0…"},
        "declined": ["auto_approve"], "allow": ["Bash(npm test)"]}}}
"""

from __future__ import annotations

import difflib
import hashlib
import json
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict

from filelock import FileLock, Timeout

from memagent.config import WIDENING_SETTINGS
from memagent.fsutil import atomic_write, private_dir
from memagent.jsontypes import JsonObject, JsonValue, json_list, json_object
from memagent.protected import POWER_FILES
from memagent.redact import redact

STORE_NAME = "projects.json"
LOCK_TIMEOUT_SECONDS = 10.0
PINNED_TEXT_MAX_BYTES = 64 * 1024


class TrustError(Exception):
    """The trust store cannot be read or written; ``str()`` is one line naming the file."""


@dataclass
class ProjectRecord:
    trusted: bool = False
    since: str | None = None
    declined: list[str] = field(default_factory=list)  # widening keys the user said no to
    allow: list[str] = field(default_factory=list)
    pins: dict[str, JsonObject] = field(default_factory=dict)  # power file → {"sha256", "text"}
    declined_changes: dict[str, str | None] = field(default_factory=dict)  # power file → declined digest
    mcp_tools: dict[str, str] = field(default_factory=dict)  # MCP server → digest of its tool list

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"trusted": self.trusted}
        fields: dict[str, JsonValue] = {
            "since": self.since,
            "pins": {**self.pins},
            "declined_changes": {**self.declined_changes},
            "mcp_tools": {**self.mcp_tools},
            "declined": [*self.declined],
            "allow": [*self.allow],
        }
        out.update((key, value) for key, value in fields.items() if value)
        return out

    @classmethod
    def from_dict(cls, data: JsonValue) -> ProjectRecord:
        if not isinstance(data, dict):
            return cls()
        since = data.get("since")
        return cls(
            bool(data.get("trusted") is True),
            since if isinstance(since, str) else None,
            [x for x in json_list(data.get("declined")) if isinstance(x, str)],
            [x for x in json_list(data.get("allow")) if isinstance(x, str)],
            {k: v for k, v in json_object(data.get("pins")).items() if isinstance(v, dict)},
            {k: v for k, v in json_object(data.get("declined_changes")).items() if v is None or isinstance(v, str)},
            {k: v for k, v in json_object(data.get("mcp_tools")).items() if isinstance(v, str)},
        )


def project_key(root: Path) -> str:
    """The project's identity: its resolved absolute root."""
    return str(Path(root).expanduser().resolve())


def widening_keys(values: Mapping[str, object]) -> list[str]:
    """The widening settings a (project) config file sets, in :data:`WIDENING_SETTINGS` order."""
    return [key for key in WIDENING_SETTINGS if key in values]


def requested_widening(config_file: Path) -> list[str]:
    """The widening settings ``config_file`` (a project's ``.memagent.toml``) sets; [] when it
    is missing or unreadable (loading settings reports that)."""
    try:
        with config_file.open("rb") as fh:
            return widening_keys(tomllib.load(fh))
    except (OSError, tomllib.TOMLDecodeError):
        return []


# ------------------------------------------------------------------ pins


def file_digest(path: Path) -> str | None:
    """sha256 of the file's bytes; None when there is no such file."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError:
        return "unreadable"


def _pin(path: Path) -> JsonObject:
    digest = file_digest(path)
    pin: JsonObject = {"sha256": digest}
    if digest not in (None, "unreadable"):
        try:
            data = path.read_bytes()
            if len(data) <= PINNED_TEXT_MAX_BYTES:
                pin["text"] = redact(data.decode("utf-8"))
        except (OSError, UnicodeDecodeError):
            pass
    return pin


def current_pins(root: Path) -> dict[str, JsonObject]:
    """What trusting the project now would record: each power file's digest (and small text)."""
    return {name: _pin(Path(root) / name) for name in POWER_FILES}


@dataclass(frozen=True)
class TrustState:
    """The project's trust as it is now: trusted at all, and which power files changed since."""

    trusted: bool
    since: str | None = None
    changed: tuple[str, ...] = ()
    declined: tuple[str, ...] = ()  # changed files whose current content the user said no to
    pinned: tuple[str, ...] = ()

    @property
    def as_now(self) -> bool:
        return self.trusted and not self.changed

    def file_trusted(self, relative: str) -> bool:
        """Is this power file trusted as it is now (trusted project, content unchanged)?"""
        return self.trusted and relative not in self.changed

    @property
    def to_ask(self) -> tuple[str, ...]:
        """Changed files the user has not yet said no to in their current form."""
        return tuple(name for name in self.changed if name not in self.declined)


def _changed(record: ProjectRecord, root: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    changed, declined = [], []
    for name in POWER_FILES:
        digest = file_digest(Path(root) / name)
        pin = record.pins.get(name)
        # never pinned (a record from before pinning): a file present now counts as changed
        before = pin.get("sha256") if isinstance(pin, dict) else None
        if before != digest:
            changed.append(name)
            if name in record.declined_changes and record.declined_changes[name] == digest:
                declined.append(name)
    return tuple(changed), tuple(declined)


def trust_state(home: Path, root: Path) -> TrustState:
    """Trusted? and which power files changed since (an unreadable store reads as untrusted)."""
    record = TrustStore(home).record(root)
    if not record.trusted:
        return TrustState(False)
    changed, declined = _changed(record, root)
    return TrustState(True, record.since, changed, declined, tuple(sorted(record.pins)))


def trusted_as_now(home: Path, root: Path, relative: str) -> bool:
    """Is the power file ``relative`` (e.g. ``.claude/settings.json``) trusted as it is now?"""
    return trust_state(home, root).file_trusted(relative)


def change_diff(home: Path, root: Path, relative: str) -> str:
    """A unified diff from the trusted text of ``relative`` to its text now (both redacted), or
    one line when a side is absent from the record (binary, unreadable, over 64 KiB)."""
    pins = TrustStore(home).record(root).pins
    pin = pins.get(relative) or {}
    before_digest = pin.get("sha256")
    now = _pin(Path(root) / relative)
    if before_digest == now["sha256"]:
        return ""
    if before_digest is not None and "text" not in pin:
        return f"{relative} changed (the trusted version was binary or over 64 KiB, so it was not kept)\n"
    if now["sha256"] is not None and "text" not in now:
        return f"{relative} changed (it is now binary, unreadable or over 64 KiB)\n"
    lines = difflib.unified_diff(
        str(pin.get("text", "")).splitlines(keepends=True),
        str(now.get("text", "")).splitlines(keepends=True),
        fromfile=f"{relative} (trusted)"
        if before_digest
        else (f"{relative} (absent when trusted)" if pins else f"{relative} (trusted before contents were recorded)"),
        tofile=f"{relative} (now)" if now["sha256"] else f"{relative} (deleted)",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def tools_digest(tools: Iterable[Mapping[str, object]]) -> str:
    """sha256 of an MCP server's tool list (names, descriptions, schemas, hints), order-free."""
    canonical = sorted(json.dumps(dict(tool), sort_keys=True, ensure_ascii=False, default=str) for tool in tools)
    return hashlib.sha256("\n".join(canonical).encode("utf-8")).hexdigest()


# ------------------------------------------------------------------ the store


@dataclass(frozen=True)
class TrustStore:
    """``$MEMAGENT_HOME/projects.json``, read and rewritten atomically under a file lock."""

    home: Path

    @property
    def path(self) -> Path:
        return self.home / STORE_NAME

    def record(self, root: Path) -> ProjectRecord:
        """The project's record (an unreadable store reads as "nothing recorded")."""
        try:
            projects = self._read()
        except TrustError:
            return ProjectRecord()
        return ProjectRecord.from_dict(projects.get(project_key(root)))

    def update(self, root: Path, change: Callable[[ProjectRecord], None]) -> ProjectRecord:
        """Apply ``change`` to the project's record and save it; TrustError when impossible."""
        private_dir(self.home)
        try:
            with FileLock(str(self.path) + ".lock", timeout=LOCK_TIMEOUT_SECONDS, mode=0o600):
                projects = self._read()
                key = project_key(root)
                record = ProjectRecord.from_dict(projects.get(key))
                change(record)
                record.allow = [redact(rule) for rule in record.allow]  # a rule never keeps a secret
                projects[key] = record.to_dict()
                body = json.dumps({"version": 1, "projects": projects}, indent=2, ensure_ascii=False) + "\n"
                atomic_write(self.path, body, keep_mode=False)
        except Timeout:
            raise TrustError(f"{self.path} is locked by another memagent process; try again") from None
        except OSError as exc:
            raise TrustError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        return record

    def _read(self) -> JsonObject:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TrustError(f"cannot read {self.path}: {exc}; fix or delete it") from None
        projects = data.get("projects") if isinstance(data, dict) else None
        if not isinstance(projects, dict):
            raise TrustError(f'cannot read {self.path}: no "projects" table; fix or delete it')
        return projects


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def is_trusted(home: Path, root: Path) -> bool:
    """Is the project trusted as it is now: trusted by the user, and no power file changed since?
    (False when the store is unreadable.)"""
    return trust_state(home, root).as_now


def trust_project(home: Path, root: Path) -> ProjectRecord:
    """Trust the project as it is now: its power files are pinned (and earlier refusals forgotten)."""
    pins = current_pins(root)

    def change(record: ProjectRecord) -> None:
        if not record.trusted:
            record.trusted, record.since = True, _now()
        record.pins = pins
        record.declined, record.declined_changes = [], {}

    return TrustStore(home).update(root, change)


def revoke_trust(home: Path, root: Path) -> bool:
    """Withdraw trust; returns whether the project was trusted. Saved rules are kept."""
    was = TrustStore(home).record(root).trusted

    def change(record: ProjectRecord) -> None:
        record.trusted, record.since, record.pins, record.declined_changes = False, None, {}, {}
        record.mcp_tools = {}

    TrustStore(home).update(root, change)
    return was


def decline_trust(home: Path, root: Path, keys: Iterable[str]) -> None:
    """Remember that the user said no to these widening keys (the REPL asks again only for new ones)."""

    def change(record: ProjectRecord) -> None:
        record.declined = sorted(set(record.declined) | set(keys))

    TrustStore(home).update(root, change)


def decline_changes(home: Path, root: Path, names: Iterable[str]) -> None:
    """The user said no to these changed power files as they are now: ask again only when they
    change once more (until then they stay untrusted)."""
    digests = {name: file_digest(Path(root) / name) for name in names}

    def change(record: ProjectRecord) -> None:
        record.declined_changes.update(digests)

    TrustStore(home).update(root, change)


def should_ask(home: Path, root: Path, keys: Iterable[str]) -> bool:
    """Ask the user to trust the project: it wants widening keys not trusted nor declined yet."""
    record = TrustStore(home).record(root)
    return not record.trusted and bool(set(keys) - set(record.declined))


def saved_rules(home: Path, root: Path) -> list[str]:
    """Allow rules saved for this project by the REPL's "always" answer."""
    return TrustStore(home).record(root).allow


def save_rule(home: Path, root: Path, rule: str) -> None:
    def change(record: ProjectRecord) -> None:
        if rule not in record.allow:
            record.allow.append(rule)

    TrustStore(home).update(root, change)


def mcp_tools_known(home: Path, root: Path, server: str, digest: str) -> bool | None:
    """Was this tool list approved for ``server``? None: no list was recorded yet."""
    recorded = TrustStore(home).record(root).mcp_tools.get(server)
    return None if recorded is None else recorded == digest


def approve_mcp_tools(home: Path, root: Path, server: str, digest: str) -> None:
    """Record ``digest`` as the approved tool list of ``server`` in this project."""

    def change(record: ProjectRecord) -> None:
        record.mcp_tools[server] = digest

    TrustStore(home).update(root, change)


class FileTrust(TypedDict):
    """One power file in :class:`TrustReport`."""

    pinned: bool
    present: bool
    changed: bool


class TrustReport(TypedDict):
    """What ``doctor`` and ``trust --status`` show about the project's trust."""

    trusted: bool
    trusted_as_now: bool
    since: str | None
    files: dict[str, FileTrust]
    changed: list[str]
    mcp_servers_pinned: list[str]
    project_file_asks_for: list[str]
    saved_rules: list[str]


def trust_report(home: Path, root: Path, config_file: Path) -> TrustReport:
    """What ``doctor`` and ``trust --status`` show: trusted?, since, each power file pinned and
    whether it changed, what the settings file asks for, the rules saved for the project."""
    record = TrustStore(home).record(root)
    state = trust_state(home, root)
    files: dict[str, FileTrust] = {}
    for name in POWER_FILES:
        pin = record.pins.get(name)
        files[name] = {
            "pinned": pin is not None,
            "present": (Path(root) / name).exists(),
            "changed": name in state.changed,
        }
    return {
        "trusted": record.trusted,
        "trusted_as_now": state.as_now,
        "since": record.since,
        "files": files,
        "changed": list(state.changed),
        "mcp_servers_pinned": sorted(record.mcp_tools),
        "project_file_asks_for": requested_widening(config_file),
        "saved_rules": record.allow,
    }


__all__ = [
    "PINNED_TEXT_MAX_BYTES",
    "ProjectRecord",
    "TrustError",
    "TrustState",
    "TrustStore",
    "WIDENING_SETTINGS",
    "approve_mcp_tools",
    "change_diff",
    "current_pins",
    "decline_changes",
    "decline_trust",
    "file_digest",
    "is_trusted",
    "mcp_tools_known",
    "project_key",
    "requested_widening",
    "revoke_trust",
    "save_rule",
    "saved_rules",
    "should_ask",
    "tools_digest",
    "trust_project",
    "trust_report",
    "trust_state",
    "trusted_as_now",
    "widening_keys",
]
