"""The task graph on disk: ``.tasks/task_<id>.json``, one file per task.

Invariants kept by every operation (and checked by ``check``):

* edges are symmetric: ``A.blocks ∋ B  ⇔  B.blockedBy ∋ A``;
* there is no cycle, and no edge to a task that does not exist;
* a completed or cancelled task has no edges: finishing a task removes it from its dependents'
  ``blockedBy`` (cancelling releases them too — a cancelled prerequisite will never be done, and
  the listing of released tasks tells the caller what to look at);
* a blocked task is not set ``in_progress``/``completed`` unless ``force`` is given;
* ids are never reused: ``.highwater`` remembers the largest id ever handed out.

Concurrency: every operation holds ``flock`` on ``.tasks/.lock`` and re-reads what it changes
from disk, so two processes never lose each other's updates. An operation that changes several
files first writes them all to ``.txn.json`` (atomically); whoever takes the lock next finishes
an interrupted transaction, so a crash leaves the graph as it was before or after, never half.
Reads go through :class:`~memagent.tasks.index.TaskIndex`; writes parse only the files they touch.

Secrets and personal data in a subject, description or owner are replaced by placeholders
naming their kind (:func:`memagent.redact.redact`) before anything is written.
"""

from __future__ import annotations

import builtins
import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from memagent.redact import redact
from memagent.tasks import graph
from memagent.tasks.files import atomic_write, directory_lock, stamp_of
from memagent.tasks.index import JOURNAL_LIMIT, Entry, TaskIndex, journal_record
from memagent.tasks.model import (
    FILE_PATTERN,
    STARTED,
    STATUSES,
    TERMINAL,
    MalformedTask,
    Task,
    TaskError,
    file_name,
    now_iso,
    task_from_bytes,
    task_from_dict,
)

TXN_NAME = ".txn.json"
HIGHWATER_NAME = ".highwater"
GITIGNORE = (
    "# written by memagent: the task graph is private by default (`git add -A` skips it).\n"
    "# Delete the `*` line to commit the task files; the cache and lock stay ignored.\n"
    "*\n.lock\n.txn.json*\nindex.json\nindex.log\n.*.tmp\n"
)
MAX_SUBJECT = 500


class TaskBlocked(TaskError):
    """Refused: the task still has open blockers. ``blockers`` describes each one in the way."""

    def __init__(self, task: Task, status: str, blockers: list[str]) -> None:
        self.task = task
        self.status = status
        self.blockers = blockers
        super().__init__(
            f"task #{task.id} cannot be set {status}: it is blocked by {', '.join(blockers)}; "
            "finish those first (or force it)"
        )


@dataclass
class GraphState:
    """One consistent read of the whole graph."""

    tasks: dict[int, Task] = field(default_factory=dict)
    unreadable: dict[int, str] = field(default_factory=dict)  # id -> reason
    problems: list[str] = field(default_factory=list)


@dataclass
class CheckResult:
    problems: list[str]  # what was found
    actions: list[str]  # what --fix changed
    remaining: list[str]  # what is still wrong afterwards (always == problems without fix)

    @property
    def ok(self) -> bool:
        return not self.remaining


class _Txn:
    """The files one operation reads and writes, committed together under the lock.

    Tasks handed out by :meth:`find` are private, freshly parsed objects: operations mutate them
    in place and :meth:`put` them; nothing reaches the disk unless the whole operation succeeds.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache: dict[int, Task | None] = {}
        self.changed: dict[int, Task] = {}
        self.high_water: int | None = None
        self.now = now_iso()

    def find(self, task_id: int) -> Task | None:
        """The task as on disk now; None when it does not exist. Raises for a malformed file."""
        if task_id not in self.cache:
            try:
                raw = (self.root / file_name(task_id)).read_bytes()
            except FileNotFoundError:
                self.cache[task_id] = None
            else:
                self.cache[task_id] = task_from_bytes(raw, file_name(task_id), task_id)
        return self.cache[task_id]

    def load(self, task_id: int) -> Task:
        if not isinstance(task_id, int) or isinstance(task_id, bool) or task_id < 1:
            raise TaskError(f"{task_id!r} is not a task id (ids are positive integers)")
        try:
            task = self.find(task_id)
        except MalformedTask as exc:
            raise TaskError(f"task #{task_id} is unreadable ({exc}); run `memagent tasks check`") from None
        if task is None:
            raise TaskError(f"task #{task_id} does not exist")
        return task

    def blocks_of(self, task_id: int) -> list[int]:
        task = self.peek(task_id)
        return task.blocks if task is not None else []

    def peek(self, task_id: int) -> Task | None:
        """Like :meth:`find`, but an unreadable file counts as absent."""
        try:
            return self.find(task_id)
        except MalformedTask:
            return None

    def put(self, task: Task) -> None:
        task.updated_at = self.now
        self.cache[task.id] = task
        self.changed[task.id] = task


class TaskStore:
    """The task graph in ``root`` (the ``.tasks`` directory). Cheap to create; holds no state
    between calls except :meth:`problems` of the last read."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.index = TaskIndex(self.root)
        self._problems: list[str] = []

    # ----------------------------------------------------------------- reads

    def load(self) -> GraphState:
        """Read the whole graph (through the index) and remember its problems."""
        if not self.root.is_dir():
            self._problems = []
            return GraphState()
        with directory_lock(self.root, create=False) as writable:
            if writable:
                self._recover()
            state = self._scan(writable)
        self._problems = list(state.problems)
        return state

    def list(self) -> list[Task]:
        state = self.load()
        return [state.tasks[tid] for tid in sorted(state.tasks)]

    def ready(self) -> builtins.list[Task]:
        return [t for t in self.list() if t.is_ready]

    def blocked(self) -> builtins.list[Task]:
        return [t for t in self.list() if t.is_blocked]

    def get(self, task_id: int) -> Task:
        """Read one task straight from its file (the source of truth)."""
        if not self.root.is_dir():
            return _Txn(self.root).load(task_id)
        with directory_lock(self.root, create=False) as writable:
            if writable:
                self._recover()
            return _Txn(self.root).load(task_id)

    def problems(self) -> builtins.list[str]:
        """Malformed files and inconsistent edges found by the last read, each naming its file."""
        return list(self._problems)

    def context_snapshot(self) -> str:
        """In-progress and ready tasks and the number blocked, for re-injection after compaction.

        An empty string when there is nothing open, so the caller can skip it.
        """
        state = self.load()
        return graph.snapshot_text(state.tasks, problems=len(state.problems))

    # ---------------------------------------------------------------- writes

    def create(self, subject: str, description: str = "", blocked_by: Iterable[int] = (), owner: str = "") -> Task:
        subject = redact(_clean_subject(subject))
        _check_text("description", description)
        _check_text("owner", owner)
        description, owner = redact(description), redact(owner)
        with self._transaction() as tx:
            task_id = self._next_id()
            task = Task(id=task_id, subject=subject, description=description, owner=owner, created_at=tx.now)
            tx.cache[task_id] = task
            for blocker in _ids(blocked_by):
                self._add_edge(tx, blocker, task_id)
            tx.put(task)
            tx.high_water = task_id
        return task

    def update(
        self,
        task_id: int,
        *,
        status: str | None = None,
        owner: str | None = None,
        add_blocked_by: Iterable[int] = (),
        add_blocks: Iterable[int] = (),
        force: bool = False,
    ) -> Task:
        """Change one task; all-or-nothing. Raises :class:`TaskError` (or :class:`TaskBlocked`)."""
        if status is not None and status not in STATUSES:
            raise TaskError(f"status {status!r} is not one of {', '.join(STATUSES)}")
        if owner is not None:
            _check_text("owner", owner)
            owner = redact(owner)
        with self._transaction() as tx:
            task = tx.load(task_id)
            before = task.to_dict()
            old_status = task.status
            if status is not None and status not in TERMINAL and task.terminal:
                task.status = status  # reopen first, so that blockers can be added below
            for blocker in _ids(add_blocked_by):
                self._add_edge(tx, blocker, task_id)
            for dependent in _ids(add_blocks):
                self._add_edge(tx, task_id, dependent)
            if status is not None and status != old_status:
                self._set_status(tx, task, status, force)
            if owner is not None:
                task.owner = owner
            if task.to_dict() != before:
                tx.put(task)
        return task

    def check(self, fix: bool = False) -> CheckResult:
        """Report every problem; with ``fix`` repair what can be repaired (see graph.plan_repairs)."""
        if not fix:
            found = self.load().problems
            return CheckResult(problems=found, actions=[], remaining=list(found))
        if not self.root.is_dir():
            return CheckResult([], [], [])
        with self._transaction() as tx:
            state = self._scan(writable=True)
            repair = graph.plan_repairs(state.tasks, state.unreadable)
            for task in repair.changed.values():
                tx.put(task)
        after = self.load()
        return CheckResult(problems=state.problems, actions=repair.actions, remaining=after.problems)

    # -------------------------------------------------------------- internals

    def _add_edge(self, tx: _Txn, blocker: int, dependent: int) -> None:
        """``blocker`` blocks ``dependent``. A finished blocker is already satisfied: no edge."""
        if blocker == dependent:
            raise TaskError(f"task #{blocker} cannot block itself")
        blocker_task = tx.load(blocker)
        dependent_task = tx.load(dependent)
        if dependent_task.terminal:
            raise TaskError(
                f"task #{dependent} is {dependent_task.status}; set it back to pending before adding blockers"
            )
        if blocker_task.terminal or dependent in blocker_task.blocks:
            return
        path = graph.find_path(dependent, blocker, tx.blocks_of)
        if path is not None:
            raise TaskError(
                f"#{blocker} cannot block #{dependent}: that would create the cycle "
                f"{graph.describe_cycle([blocker, *path])} (→ means 'blocks')"
            )
        blocker_task.blocks = sorted({*blocker_task.blocks, dependent})
        dependent_task.blockedBy = sorted({*dependent_task.blockedBy, blocker})
        tx.put(blocker_task)
        tx.put(dependent_task)

    def _set_status(self, tx: _Txn, task: Task, status: str, force: bool) -> None:
        if status in STARTED and task.blockedBy and not force:
            raise TaskBlocked(task, status, [_describe_blocker(tx, i) for i in task.blockedBy])
        task.status = status
        if status not in TERMINAL:
            return
        for dependent in list(task.blocks):
            self._release(tx, task.id, dependent)
        for blocker in list(task.blockedBy):
            self._release(tx, blocker, task.id)

    def _release(self, tx: _Txn, blocker: int, dependent: int) -> None:
        """Remove the edge on both sides; a side whose file is missing or unreadable is skipped."""
        for tid, key, other in ((blocker, "blocks", dependent), (dependent, "blockedBy", blocker)):
            current = tx.peek(tid)
            if current is None or other not in getattr(current, key):
                continue
            setattr(current, key, [i for i in getattr(current, key) if i != other])
            tx.put(current)

    def _read_high_water(self) -> int | None:
        try:
            return int((self.root / HIGHWATER_NAME).read_text().strip() or 0)
        except (FileNotFoundError, ValueError):
            return None

    def _next_id(self) -> int:
        """Above every id ever handed out here and every task file present (ids are never reused).

        Reads raise the mark to the largest id they see on disk, so files other tools wrote count
        too; the probe below covers any written since the last read.
        """
        high = self._read_high_water()
        if high is None:
            high = max(self._ids_on_disk(), default=0)
        candidate = high + 1
        while (self.root / file_name(candidate)).exists():
            candidate += 1
        return candidate

    def _ids_on_disk(self) -> Iterator[int]:
        for name in os.listdir(self.root):
            match = FILE_PATTERN.match(name)
            if match:
                yield int(match.group(1))

    @contextmanager
    def _transaction(self) -> Iterator[_Txn]:
        fresh = not self.root.exists()
        with directory_lock(self.root, create=True):
            if fresh:
                self._write_gitignore()
            self._recover()
            tx = _Txn(self.root)
            yield tx
            self._commit(tx.changed.values(), tx.high_water)

    def _write_gitignore(self) -> None:
        """Ignore everything (private by default); the cache, lock and journal also by name,
        for a user who chooses to commit the task files."""
        path = self.root / ".gitignore"
        if not path.exists():
            atomic_write(path, GITIGNORE.encode())

    def _commit(self, tasks: Iterable[Task], high_water: int | None) -> None:
        tasks = sorted(tasks, key=lambda t: t.id)
        if high_water is not None:
            atomic_write(self.root / HIGHWATER_NAME, f"{high_water}\n".encode())
        if not tasks:
            return
        txn = self.root / TXN_NAME
        if len(tasks) > 1:
            atomic_write(txn, json.dumps({"tasks": [t.to_dict() for t in tasks]}, ensure_ascii=False).encode())
        self._apply(tasks)
        if len(tasks) > 1:
            os.unlink(txn)

    def _apply(self, tasks: builtins.list[Task]) -> None:
        records: list[str] = []
        for task in tasks:
            st = atomic_write(self.root / file_name(task.id), task.to_json().encode())
            records.append(journal_record(task, stamp_of(st)))
        self.index.append(records)

    def _recover(self) -> None:
        """Finish a multi-file write that a crashed process left in ``.txn.json``."""
        txn = self.root / TXN_NAME
        try:
            raw = txn.read_bytes()
        except FileNotFoundError:
            return
        try:
            tasks = [task_from_dict(d, TXN_NAME) for d in json.loads(raw)["tasks"]]
        except (ValueError, KeyError, TypeError, TaskError):
            # Written atomically by us, so this is a hand-made or foreign file: keep it aside.
            os.replace(txn, self.root / f"{TXN_NAME}.corrupt")
            return
        self._apply(tasks)
        os.unlink(txn)

    def _scan(self, writable: bool) -> GraphState:
        cached = self.index.load()
        entries, dirty = cached.entries, cached.dirty
        state = GraphState()
        seen: set[int] = set()
        with os.scandir(self.root) as it:
            for item in it:
                name = item.name
                if not name.startswith("task_"):
                    continue
                match = FILE_PATTERN.match(name)
                if match is None:
                    if name.endswith(".json"):
                        state.problems.append(f"{name}: file name is not task_<id>.json with a plain number; ignored")
                    continue
                task_id = int(match.group(1))
                try:
                    st = item.stat()
                except OSError:
                    continue  # vanished, or a dangling symlink
                stamp = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)  # = files.stamp_of, inlined
                entry = entries.get(task_id)
                if entry is None or entry.stamp != stamp:
                    entry = entries[task_id] = _read_entry(Path(item.path), task_id, stamp)
                    dirty = True
                seen.add(task_id)
                if entry.task is not None:
                    state.tasks[task_id] = entry.task
                else:
                    state.unreadable[task_id] = entry.error or "unreadable"
                    state.problems.append(f"{entry.error}; skipped")
        for gone in [tid for tid in entries if tid not in seen]:
            del entries[gone]
            dirty = True
        graph_problems = cached.problems
        if dirty or graph_problems is None:
            graph_problems = graph.graph_problems(state.tasks, state.unreadable)
        if writable:
            fold = dirty or cached.journal_lines > JOURNAL_LIMIT
            self._save_index(entries, graph_problems, fold, max(seen, default=0))
        state.problems.sort(key=_file_order)
        state.problems += graph_problems
        return state

    def _save_index(self, entries: dict[int, Entry], problems: builtins.list[str], dirty: bool, top_id: int) -> None:
        """Write the cache back when it changed, and raise the id high-water mark to what is on disk."""
        try:
            if top_id > (self._read_high_water() or 0):
                atomic_write(self.root / HIGHWATER_NAME, f"{top_id}\n".encode())
            if dirty:
                self.index.save(entries, problems)
        except OSError:
            pass  # the cache is an optimisation; a full disk must not break reads


def _read_entry(path: Path, task_id: int, stamp: tuple[int, int, int, int]) -> Entry:
    try:
        task = task_from_bytes(path.read_bytes(), path.name, task_id)
    except MalformedTask as exc:
        return Entry(stamp, error=str(exc))
    except OSError as exc:
        return Entry(stamp, error=f"{path.name}: cannot be read ({exc.strerror})")
    return Entry(stamp, task=task)


def _describe_blocker(tx: _Txn, task_id: int) -> str:
    try:
        task = tx.find(task_id)
    except MalformedTask:
        return f"#{task_id} (unreadable file)"
    if task is None:
        return f"#{task_id} (missing)"
    return f"#{task_id} {task.subject!r} ({task.status})"


def _file_order(problem: str) -> tuple[int, str]:
    match = FILE_PATTERN.match(problem.split(":", 1)[0])
    return (int(match.group(1)) if match else 0, problem)


def _ids(values: Iterable[object]) -> list[int]:
    out: list[int] = []
    for value in values:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise TaskError(f"{value!r} is not a task id (ids are positive integers)")
        if value not in out:
            out.append(value)
    return out


def _clean_subject(subject: object) -> str:
    if not isinstance(subject, str) or not subject.strip():
        raise TaskError("a task needs a non-empty subject")
    clean = " ".join(subject.split())
    if len(clean) > MAX_SUBJECT:
        raise TaskError(
            f"the subject is {len(clean)} characters; keep it under {MAX_SUBJECT} and put details in the description"
        )
    return clean


def _check_text(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise TaskError(f"{name} must be a string")
