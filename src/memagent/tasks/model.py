"""The task record and its strict reader.

A task file is ``.tasks/task_<id>.json``::

    {"id": 4, "subject": "...", "description": "...", "status": "pending",
     "blockedBy": [2, 3], "blocks": [7], "owner": "", "created_at": "...", "updated_at": "..."}

Files written by other tools may omit the optional keys (``description``, ``owner``,
``blockedBy``, ``blocks``, timestamps) and may carry keys of their own; unknown keys are kept
verbatim and written back on the next save. Anything else that is off (bad JSON, a wrong type,
an unknown status, an id that does not match the file name) makes the file *malformed*: it is
reported by name with the reason and skipped, never guessed at.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memagent.jsontypes import JsonObject, JsonValue

PENDING = "pending"
IN_PROGRESS = "in_progress"
COMPLETED = "completed"
CANCELLED = "cancelled"
STATUSES = (PENDING, IN_PROGRESS, COMPLETED, CANCELLED)
# A task in a terminal status has no edges: finishing it releases its dependents.
TERMINAL = frozenset({COMPLETED, CANCELLED})
# Statuses that mean "work on this has started": refused while the task is still blocked.
STARTED = frozenset({IN_PROGRESS, COMPLETED})

KNOWN_KEYS = ("id", "subject", "description", "status", "blockedBy", "blocks", "owner", "created_at", "updated_at")
FILE_PATTERN = re.compile(r"^task_([1-9]\d*)\.json$")


class TaskError(Exception):
    """A refused or failed task operation; ``str()`` is a one-line message a model or user can act on."""


class MalformedTask(TaskError):
    """A task file that cannot be read as a task; the message starts with the file name."""


def file_name(task_id: int) -> str:
    return f"task_{task_id}.json"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Task:
    id: int
    subject: str
    description: str = ""
    status: str = PENDING
    blockedBy: list[int] = field(default_factory=list)
    blocks: list[int] = field(default_factory=list)
    owner: str = ""
    created_at: str = ""
    updated_at: str = ""
    # Keys other tools wrote; preserved in order on every save.
    extra: JsonObject = field(default_factory=dict)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def is_ready(self) -> bool:
        """Ready: pending, with an empty ``blockedBy`` (finishing or cancelling a blocker releases it)."""
        return self.status == PENDING and not self.blockedBy

    @property
    def is_blocked(self) -> bool:
        return not self.terminal and bool(self.blockedBy)

    def to_dict(self) -> JsonObject:
        data: JsonObject = {
            "id": self.id,
            "subject": self.subject,
            "description": self.description,
            "status": self.status,
            "blockedBy": [*self.blockedBy],
            "blocks": [*self.blocks],
            "owner": self.owner,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }
        for key, value in self.extra.items():
            data.setdefault(key, value)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def copy(self) -> Task:
        return Task(
            id=self.id,
            subject=self.subject,
            description=self.description,
            status=self.status,
            blockedBy=list(self.blockedBy),
            blocks=list(self.blocks),
            owner=self.owner,
            created_at=self.created_at,
            updated_at=self.updated_at,
            extra=dict(self.extra),
        )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _id_list(data: JsonObject, key: str, name: str) -> list[int]:
    value = data.get(key, [])
    ids = [v for v in value if isinstance(v, int) and not isinstance(v, bool)] if isinstance(value, list) else []
    if not isinstance(value, list) or len(ids) != len(value):
        raise MalformedTask(f"{name}: {key!r} must be a list of integer task ids, got {json.dumps(value)[:60]}")
    return sorted(set(ids))


def _text(data: JsonObject, key: str, name: str, *, required: bool = False) -> str:
    if key not in data:
        if required:
            raise MalformedTask(f"{name}: {key!r} is missing")
        return ""
    value = data[key]
    if not isinstance(value, str):
        raise MalformedTask(f"{name}: {key!r} must be a string, got {type(value).__name__}")
    return value


def task_from_dict(data: JsonValue, name: str, expected_id: int | None = None) -> Task:
    """Validate a decoded task file strictly; ``name`` (the file name) prefixes every error."""
    if not isinstance(data, dict):
        raise MalformedTask(f"{name}: expected a JSON object, got {type(data).__name__}")
    if "id" not in data:
        raise MalformedTask(f"{name}: 'id' is missing")
    task_id = data["id"]
    if not isinstance(task_id, int) or isinstance(task_id, bool) or task_id < 1:
        raise MalformedTask(f"{name}: 'id' must be a positive integer, got {json.dumps(task_id)[:40]}")
    if expected_id is not None and task_id != expected_id:
        raise MalformedTask(f"{name}: 'id' is {task_id} but the file name says {expected_id}")
    subject = _text(data, "subject", name, required=True)
    status = _text(data, "status", name, required=True)
    if status not in STATUSES:
        raise MalformedTask(f"{name}: status {status!r} is not one of {', '.join(STATUSES)}")
    return Task(
        id=task_id,
        subject=subject,
        description=_text(data, "description", name),
        status=status,
        blockedBy=_id_list(data, "blockedBy", name),
        blocks=_id_list(data, "blocks", name),
        owner=_text(data, "owner", name),
        created_at=_text(data, "created_at", name),
        updated_at=_text(data, "updated_at", name),
        extra={k: v for k, v in data.items() if k not in KNOWN_KEYS},
    )


def task_from_bytes(raw: bytes, name: str, expected_id: int | None = None) -> Task:
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise MalformedTask(f"{name}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise MalformedTask(f"{name}: invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise MalformedTask(f"{name}: JSON nested too deeply") from None
    return task_from_dict(data, name, expected_id)
