"""A rebuildable cache of the task files, so that neither reads nor writes parse every file.

The per-task files stay the source of truth. The cache is two files:

* ``index.json`` — a snapshot: a header line ``{"format": 2, "digest": ..., "problems": [...]}``
  and then one JSON array of rows ``[id, mtime_ns, ctime_ns, size, inode, kind, payload]``,
  ``kind`` being ``"t"`` (payload: the task's fields in :data:`ROW_FIELDS` order) or ``"e"``
  (payload: why the file is malformed). The digest covers the rows, so a hand-edited or torn
  snapshot is detected and rebuilt, and rows can be trusted without validating each one again.
  ``problems`` are the graph problems of exactly these rows, so a clean read skips the checks;
* ``index.log`` — one full entry per line, appended by every write: a write costs the files it
  touches, not a rewrite of the snapshot. Log lines are validated like task files.

A reader folds the log into the snapshot, then compares each entry's stamp with a ``stat`` of
the file; only files whose stamp differs (edited by hand, written by another tool, or written by
a process that died before appending to the log) are parsed again. When anything had to be
refreshed, or the log has grown past :data:`JOURNAL_LIMIT` lines, the reader writes a new
snapshot and removes the log. A missing, stale or corrupt cache therefore costs one rebuild,
never a wrong answer.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from memagent.fsutil import open_private_append
from memagent.jsontypes import JsonValue
from memagent.tasks.files import atomic_write
from memagent.tasks.model import MalformedTask, Task, file_name, task_from_dict

INDEX_NAME = "index.json"
JOURNAL_NAME = "index.log"
FORMAT = 2
# Fold the log into the snapshot once it has this many lines: rewriting the snapshot costs about
# as much as reading it, so folding after every write would double the cost of the next read.
JOURNAL_LIMIT = 500

Stamp = tuple[int, int, int, int]


class Entry(NamedTuple):
    """What the cache knows about one task file: its stamp and either the task or the error."""

    stamp: Stamp
    task: Task | None = None
    error: str | None = None


@dataclass
class Cached:
    entries: dict[int, Entry]
    problems: list[str] | None  # graph problems of ``entries``; None when they must be recomputed
    dirty: bool  # the snapshot is missing or unusable: write a new one
    journal_lines: int = 0  # log lines folded into ``entries``


def _digest(body: bytes) -> str:
    return hashlib.blake2b(body, digest_size=16).hexdigest()


def _row(task_id: int, entry: Entry) -> list[JsonValue]:
    if entry.task is None:
        return [task_id, *entry.stamp, "e", entry.error]
    t = entry.task
    fields: list[JsonValue] = [
        t.subject,
        t.description,
        t.status,
        [*t.blockedBy],
        [*t.blocks],
        t.owner,
        t.created_at,
        t.updated_at,
    ]
    if t.extra:
        fields.append(t.extra)
    return [task_id, *entry.stamp, "t", fields]


def _entries_from_rows(rows: list[list[Any]]) -> dict[int, Entry]:
    """The hot loop of every read: kept flat (no per-row helper calls) on purpose. The rows are
    JSON the snapshot's digest vouches for (this module wrote them from validated tasks), taken
    as they are without a per-field check: the room's one value of unchecked type."""
    entries: dict[int, Entry] = {}
    new_entry = Entry._make
    for task_id, mtime, ctime, size, ino, kind, payload in rows:
        if kind == "e":
            entries[task_id] = new_entry(((mtime, ctime, size, ino), None, payload))
            continue
        if len(payload) == 8:
            task = Task(task_id, *payload)
        else:
            task = Task(task_id, *payload[:8])
            task.extra = payload[8]
        entries[task_id] = new_entry(((mtime, ctime, size, ino), task, None))
    return entries


def journal_record(task: Task, stamp: Stamp) -> str:
    return json.dumps(
        {"id": task.id, "stamp": list(stamp), "task": task.to_dict()}, ensure_ascii=False, separators=(",", ":")
    )


class TaskIndex:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / INDEX_NAME
        self.journal = root / JOURNAL_NAME

    def load(self) -> Cached:
        cached = self._load_snapshot()
        try:
            raw = self.journal.read_bytes()
        except FileNotFoundError:
            return cached
        lines = raw.splitlines()
        for line in lines:
            try:
                record = json.loads(line)
                task_id, stamp = record["id"], tuple(record["stamp"])
                task = task_from_dict(record["task"], file_name(task_id), task_id)
            except (ValueError, KeyError, TypeError, MalformedTask):
                continue  # a torn or foreign line: the stamp check re-reads that file anyway
            if len(stamp) == 4:
                cached.entries[task_id] = Entry(stamp, task=task)
        cached.problems = None
        cached.journal_lines = len(lines)
        return cached

    def _load_snapshot(self) -> Cached:
        rebuild = Cached(entries={}, problems=None, dirty=True)
        try:
            raw = self.path.read_bytes()
        except OSError:
            return rebuild
        header_end = raw.find(b"\n")
        try:
            header = json.loads(raw[:header_end])
            body = raw[header_end + 1 :]
            if header.get("format") != FORMAT or header.get("digest") != _digest(body):
                return rebuild
            entries = _entries_from_rows(json.loads(body))
        except (ValueError, TypeError, AttributeError):
            return rebuild
        problems = header.get("problems")
        return Cached(entries=entries, problems=problems if isinstance(problems, list) else None, dirty=False)

    def append(self, records: list[str]) -> None:
        """Record freshly written files; one ``write`` call so lines from one commit stay together."""
        if records:
            with open_private_append(self.journal) as fh:
                fh.write("".join(line + "\n" for line in records).encode("utf-8"))

    def save(self, entries: dict[int, Entry], problems: list[str]) -> None:
        body = json.dumps(
            [_row(k, entries[k]) for k in sorted(entries)], ensure_ascii=False, separators=(",", ":")
        ).encode()
        header = json.dumps({"format": FORMAT, "digest": _digest(body), "problems": problems}, ensure_ascii=False)
        atomic_write(self.path, header.encode() + b"\n" + body)
        try:
            os.unlink(self.journal)
        except FileNotFoundError:
            pass
