"""Which projects the user trusts, and the permission rules saved for each.

A cloned repository is untrusted input: its ``.memagent.toml`` may not widen what memagent does
(approve its own commands, add allow rules or hooks, start MCP servers, send memory to a server,
turn the sandbox off) until the user trusts the project once, with ``memagent trust`` or the
REPL's prompt. The record lives in ``$MEMAGENT_HOME/projects.json`` (user-owned, 0600), keyed by
the project's identity — its resolved absolute root — and never in the project itself, so a
repository cannot trust itself.

The same file keeps the rules saved by the REPL's "always" answer for each project; they are the
user's own decisions, so they count as trusted.

Format::

    {"version": 1,
     "projects": {"/home/me/app": {"trusted": true, "since": "2026-11-22T17:00:00+00:00",
                                   "declined": ["auto_approve"], "allow": ["Bash(npm test)"]}}}
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from filelock import FileLock, Timeout

from memagent.config import WIDENING_SETTINGS
from memagent.fsutil import atomic_write, private_dir
from memagent.redact import redact

STORE_NAME = "projects.json"
LOCK_TIMEOUT_SECONDS = 10.0

class TrustError(Exception):
    """The trust store cannot be read or written; ``str()`` is one line naming the file."""


@dataclass
class ProjectRecord:
    trusted: bool = False
    since: str | None = None
    declined: list[str] = field(default_factory=list)  # widening keys the user said no to
    allow: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"trusted": self.trusted}
        if self.since:
            out["since"] = self.since
        if self.declined:
            out["declined"] = self.declined
        if self.allow:
            out["allow"] = self.allow
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "ProjectRecord":
        if not isinstance(data, dict):
            return cls()
        strings = lambda key: [x for x in data.get(key) or [] if isinstance(x, str)]  # noqa: E731
        since = data.get("since")
        return cls(bool(data.get("trusted") is True), since if isinstance(since, str) else None,
                   strings("declined"), strings("allow"))


def project_key(root: Path) -> str:
    """The project's identity: its resolved absolute root."""
    return str(Path(root).expanduser().resolve())


def widening_keys(values: Mapping[str, Any]) -> list[str]:
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

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TrustError(f"cannot read {self.path}: {exc}; fix or delete it") from None
        projects = data.get("projects") if isinstance(data, dict) else None
        if not isinstance(projects, dict):
            raise TrustError(f"cannot read {self.path}: no \"projects\" table; fix or delete it")
        return projects


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def is_trusted(home: Path, root: Path) -> bool:
    """Has the user trusted the project at ``root``? (False when the store is unreadable.)"""
    return TrustStore(home).record(root).trusted


def trust_project(home: Path, root: Path) -> ProjectRecord:
    def change(record: ProjectRecord) -> None:
        if not record.trusted:
            record.trusted, record.since = True, _now()
        record.declined = []

    return TrustStore(home).update(root, change)


def revoke_trust(home: Path, root: Path) -> bool:
    """Withdraw trust; returns whether the project was trusted. Saved rules are kept."""
    was = is_trusted(home, root)

    def change(record: ProjectRecord) -> None:
        record.trusted, record.since = False, None

    TrustStore(home).update(root, change)
    return was


def decline_trust(home: Path, root: Path, keys: Iterable[str]) -> None:
    """Remember that the user said no to these widening keys (the REPL asks again only for new ones)."""

    def change(record: ProjectRecord) -> None:
        record.declined = sorted(set(record.declined) | set(keys))

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


def permission_report(home: Path, root: Path, config_file: Path, *, mode: str, allow: Iterable[str] = (),
                      ask: Iterable[str] = (), deny: Iterable[str] = ()) -> dict[str, Any]:
    """What ``doctor`` shows: the mode, the rules, whether the project is trusted and what its
    settings file asks for."""
    record = TrustStore(home).record(root)
    return {
        "mode": mode,
        "allow": [*allow], "ask": [*ask], "deny": [*deny],
        "saved_rules": record.allow,
        "project_trusted": record.trusted,
        "project_file_asks_for": requested_widening(config_file),
    }


__all__ = [
    "ProjectRecord",
    "permission_report",
    "TrustError",
    "TrustStore",
    "WIDENING_SETTINGS",
    "decline_trust",
    "is_trusted",
    "project_key",
    "requested_widening",
    "revoke_trust",
    "save_rule",
    "saved_rules",
    "should_ask",
    "trust_project",
    "widening_keys",
]
