"""TaskStore: graph rules, file format, ids, corrupt files, index, crash recovery, snapshot."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import memagent.tasks.store as store_module
from memagent.tasks import TaskBlocked, TaskError, TaskStore


@pytest.fixture
def store(tmp_path: Path) -> TaskStore:
    return TaskStore(tmp_path / ".tasks")


def raw(store: TaskStore, task_id: int) -> dict:
    return json.loads((store.root / f"task_{task_id}.json").read_text())


def edges(store: TaskStore) -> dict[int, tuple[list[int], list[int], str]]:
    return {t.id: (t.blockedBy, t.blocks, t.status) for t in store.list()}


def write_raw(store: TaskStore, name: str, content: str | dict) -> None:
    store.root.mkdir(parents=True, exist_ok=True)
    text = content if isinstance(content, str) else json.dumps(content)
    (store.root / name).write_text(text)


# ------------------------------------------------------------------ basic graph rules


def test_create_writes_the_documented_format(store):
    task = store.create("Write the parser", "tokens and AST", owner="agent")
    assert task.id == 1
    data = raw(store, 1)
    assert list(data) == [
        "id",
        "subject",
        "description",
        "status",
        "blockedBy",
        "blocks",
        "owner",
        "created_at",
        "updated_at",
    ]
    assert data["subject"] == "Write the parser" and data["status"] == "pending" and data["owner"] == "agent"
    assert data["created_at"] and data["created_at"] == data["updated_at"]
    assert [store.create(f"t{i}").id for i in range(3)] == [2, 3, 4]
    ignored = (store.root / ".gitignore").read_text().splitlines()
    assert {"index.json", "index.log", ".lock"} <= set(ignored)


def test_edges_are_symmetric(store):
    a, b = store.create("a"), store.create("b")
    c = store.create("c", blocked_by=[a.id, b.id])
    assert c.blockedBy == [1, 2]
    assert raw(store, 1)["blocks"] == [3] and raw(store, 2)["blocks"] == [3]
    store.update(a.id, add_blocks=[b.id])
    assert edges(store) == {1: ([], [2, 3], "pending"), 2: ([1], [3], "pending"), 3: ([1, 2], [], "pending")}


def test_unknown_ids_and_self_edges_are_refused_and_nothing_is_written(store):
    a = store.create("a")
    before = sorted(os.listdir(store.root))
    with pytest.raises(TaskError, match="task #9 does not exist"):
        store.create("b", blocked_by=[9])
    with pytest.raises(TaskError, match="cannot block itself"):
        store.update(a.id, add_blocked_by=[a.id])
    with pytest.raises(TaskError, match="task #5 does not exist"):
        store.update(5, status="completed")
    with pytest.raises(TaskError, match="not a task id"):
        store.create("b", blocked_by=[0])
    assert sorted(os.listdir(store.root)) == before
    assert raw(store, 1)["blocks"] == []


def test_cycles_are_refused_with_the_cycle_named(store):
    for name in "abcd":
        store.create(name)
    store.update(2, add_blocked_by=[1])
    store.update(3, add_blocked_by=[2])
    store.update(4, add_blocked_by=[3])
    with pytest.raises(TaskError, match=r"#4 cannot block #1: that would create the cycle #4 → #1 → #2 → #3 → #4"):
        store.update(1, add_blocked_by=[4])
    with pytest.raises(TaskError, match="cycle #3 → #2 → #3"):
        store.update(3, add_blocks=[2])
    assert raw(store, 1)["blockedBy"] == [] and raw(store, 4)["blocks"] == []


def test_an_update_is_all_or_nothing(store):
    for name in "abc":
        store.create(name)
    store.update(2, add_blocked_by=[1])
    # the first new edge is fine, the second closes a cycle: neither is kept, nor the owner
    with pytest.raises(TaskError, match="cycle"):
        store.update(1, add_blocked_by=[3, 2], owner="me")
    assert edges(store) == {1: ([], [2], "pending"), 2: ([1], [], "pending"), 3: ([], [], "pending")}
    assert raw(store, 1)["owner"] == ""


def test_completing_unblocks_dependents(store):
    a, b = store.create("a"), store.create("b")
    c = store.create("c", blocked_by=[a.id, b.id])
    d = store.create("d", blocked_by=[a.id])
    assert [t.id for t in store.ready()] == [1, 2]
    store.update(a.id, status="completed")
    assert edges(store)[1] == ([], [], "completed")
    assert raw(store, c.id)["blockedBy"] == [2]
    assert [t.id for t in store.ready()] == [2, 4]
    assert [t.id for t in store.blocked()] == [3]
    assert d.id in [t.id for t in store.ready()]


def test_blocked_tasks_cannot_start_or_finish_unless_forced(store):
    a = store.create("prepare")
    b = store.create("ship", blocked_by=[a.id])
    for status in ("in_progress", "completed"):
        with pytest.raises(TaskBlocked) as info:
            store.update(b.id, status=status)
        assert f"task #2 cannot be set {status}: it is blocked by #1 'prepare' (pending)" in str(info.value)
    assert raw(store, 2)["status"] == "pending"
    store.update(b.id, status="in_progress", force=True)
    assert edges(store)[2] == ([1], [], "in_progress")  # forced start keeps the dependency visible
    store.update(b.id, status="completed", force=True)
    assert edges(store) == {1: ([], [], "pending"), 2: ([], [], "completed")}


def test_a_finished_blocker_is_already_satisfied(store):
    a = store.create("a")
    store.update(a.id, status="completed")
    b = store.create("b", blocked_by=[a.id])
    assert b.blockedBy == [] and b.is_ready
    with pytest.raises(TaskError, match="task #1 is completed; set it back to pending"):
        store.update(a.id, add_blocked_by=[b.id])
    reopened = store.update(a.id, status="pending", add_blocked_by=[b.id])
    assert reopened.status == "pending" and reopened.blockedBy == [2]


def test_cancel_releases_dependents(store):
    a = store.create("a")
    store.create("b", blocked_by=[a.id])
    store.update(a.id, status="cancelled")
    assert edges(store) == {1: ([], [], "cancelled"), 2: ([], [], "pending")}


def test_unknown_status_is_refused(store):
    store.create("a")
    with pytest.raises(TaskError, match="status 'done' is not one of pending, in_progress, completed, cancelled"):
        store.update(1, status="done")


def test_ids_are_never_reused(store):
    for name in "abc":
        store.create(name)
    (store.root / "task_3.json").unlink()
    assert store.create("d").id == 4
    (store.root / ".highwater").unlink()
    (store.root / "task_4.json").unlink()
    # without the high-water file the ids on disk still rule out collisions
    assert store.create("e").id == 3
    write_raw(store, "task_9.json", {"id": 9, "subject": "foreign", "status": "pending"})
    (store.root / ".highwater").write_text("3\n")
    assert [store.create(n).id for n in "fg"] == [4, 5]
    (store.root / ".highwater").write_text("8\n")
    assert store.create("h").id == 10  # task_9.json exists: skipped


def test_files_from_other_tools_are_read_and_their_keys_kept(store):
    write_raw(
        store, "task_1.json", {"id": 1, "subject": "foreign", "status": "pending", "priority": "high", "blocks": []}
    )
    write_raw(store, "task_2.json", {"id": 2, "subject": "other", "status": "in_progress", "tags": ["x"]})
    assert [t.subject for t in store.list()] == ["foreign", "other"]
    assert store.problems() == []
    store.update(2, add_blocked_by=[1])
    assert raw(store, 1)["priority"] == "high"
    assert raw(store, 2)["tags"] == ["x"]
    assert raw(store, 2)["blockedBy"] == [1]


def test_missing_directory_reads_as_empty_and_is_not_created(store):
    assert store.list() == []
    assert store.context_snapshot() == ""
    assert not store.root.exists()
    with pytest.raises(TaskError, match="does not exist"):
        store.get(1)


# ------------------------------------------------------------------ corrupt files


CORRUPT = {
    "task_3.json": ("{not json", "invalid JSON"),
    "task_4.json": (
        {"id": 4, "subject": "x", "status": "pending", "blockedBy": "2"},
        "'blockedBy' must be a list of integer task ids",
    ),
    "task_5.json": ({"id": 5, "subject": "x", "status": "done"}, "status 'done' is not one of"),
    "task_6.json": ({"id": 7, "subject": "x", "status": "pending"}, "'id' is 7 but the file name says 6"),
    "task_8.json": ([1, 2], "expected a JSON object"),
    "task_10.json": ({"id": 10, "status": "pending"}, "'subject' is missing"),
    "task_11.json": ({"id": 11, "subject": 5, "status": "pending"}, "'subject' must be a string"),
    "task_12.json": ("", "invalid JSON"),
    "task_abc.json": ({"id": 13, "subject": "x", "status": "pending"}, "file name is not task_<id>.json"),
}


def test_malformed_files_are_reported_by_name_and_skipped(store):
    store.create("good one")
    store.create("good two", blocked_by=[1])
    for name, (content, _) in CORRUPT.items():
        write_raw(store, name, content)
    assert [t.id for t in store.list()] == [1, 2]
    problems = store.problems()
    for name, (_, reason) in CORRUPT.items():
        assert any(p.startswith(f"{name}:") and reason in p for p in problems), (name, problems)
    assert [t.id for t in store.ready()] == [1]
    # the rest of the graph keeps working
    store.update(1, status="completed")
    assert [t.id for t in store.ready()] == [2]
    assert store.create("three").id == 13
    with pytest.raises(TaskError, match=r"task #3 is unreadable \(task_3.json: invalid JSON"):
        store.get(3)
    with pytest.raises(TaskError, match="task #4 is unreadable"):
        store.update(2, add_blocked_by=[4])


def test_a_repaired_file_comes_back(store):
    store.create("a")
    write_raw(store, "task_2.json", "{broken")
    assert [t.id for t in store.list()] == [1]
    write_raw(store, "task_2.json", {"id": 2, "subject": "fixed", "status": "pending"})
    assert [t.subject for t in store.list()] == ["a", "fixed"]
    assert store.problems() == []


def hand_edit(store: TaskStore, task_id: int, **changes) -> None:
    data = raw(store, task_id)
    data.update(changes)
    write_raw(store, f"task_{task_id}.json", data)


def test_check_reports_and_fixes_broken_edges(store):
    for name in "abcde":
        store.create(name)
    hand_edit(store, 1, blockedBy=[42])  # edge to a missing task
    hand_edit(store, 2, blocks=[3])  # one-sided: 3 does not list 2
    hand_edit(store, 4, blockedBy=[5])  # cycle 4 -> 5 -> 4, written by hand on both sides
    hand_edit(store, 5, blockedBy=[4], blocks=[4])
    hand_edit(store, 4, blocks=[5], blockedBy=[5])
    result = store.check()
    assert not result.ok and result.actions == []
    text = "\n".join(result.problems)
    assert "task_1.json: blockedBy names #42, which does not exist" in text
    assert "task_2.json: blocks has #3 but task_3.json lacks #2 in blockedBy" in text
    assert "dependency cycle #4 → #5 → #4" in text

    fixed = store.check(fix=True)
    assert fixed.ok and fixed.remaining == []
    assert len(fixed.actions) >= 3
    assert raw(store, 1)["blockedBy"] == []
    assert raw(store, 3)["blockedBy"] == [2]  # the one-sided edge got its missing half
    assert len(raw(store, 4)["blockedBy"]) + len(raw(store, 5)["blockedBy"]) == 1
    assert store.check().ok


def test_check_fix_releases_dependents_of_a_finished_task_written_elsewhere(store):
    # Another tool completed #1 but left #2 blocked by it (and kept #1.blocks).
    write_raw(store, "task_1.json", {"id": 1, "subject": "a", "status": "completed", "blocks": [2]})
    write_raw(store, "task_2.json", {"id": 2, "subject": "b", "status": "pending", "blockedBy": [1]})
    assert any("still blocked by #1, which is completed" in p for p in store.check().problems)
    assert store.check(fix=True).ok
    assert [t.id for t in store.ready()] == [2]
    assert raw(store, 1)["blocks"] == []


def test_check_leaves_unreadable_files_to_the_user(store):
    store.create("a")
    write_raw(store, "task_2.json", "{")
    hand_edit(store, 1, blocks=[2])
    result = store.check(fix=True)
    assert not result.ok
    assert result.remaining == [
        "task_2.json: invalid JSON (Expecting property name enclosed in double quotes at line 1 column 2); skipped"
    ]
    assert raw(store, 1)["blocks"] == [2]  # not guessed at
    assert (store.root / "task_2.json").read_text() == "{"


# ------------------------------------------------------------------ index


def test_index_is_rebuilt_when_missing_corrupt_or_stale(store):
    for name in "abc":
        store.create(name)
    store.update(2, add_blocked_by=[1])
    expected = edges(store)
    index = store.root / "index.json"
    assert index.exists() and not (store.root / "index.log").exists()
    index.unlink()
    assert edges(store) == expected and index.exists()
    index.write_text("{garbage")
    assert edges(store) == expected
    assert index.read_text().startswith('{"format": 2, "digest": ')
    # a hand edit the index does not know about
    hand_edit(store, 3, subject="renamed by hand", owner="bob")
    assert [t.subject for t in store.list()][2] == "renamed by hand"
    # an index claiming a task that has no file
    (store.root / "task_3.json").unlink()
    assert [t.id for t in store.list()] == [1, 2]


def tamper_index(store: TaskStore, old: str, new: str, *, fix_digest: bool) -> None:
    from memagent.tasks.index import _digest

    header, body = (store.root / "index.json").read_bytes().split(b"\n", 1)
    body = body.replace(old.encode(), new.encode())
    meta = json.loads(header)
    if fix_digest:
        meta["digest"] = _digest(body)
    (store.root / "index.json").write_bytes(json.dumps(meta).encode() + b"\n" + body)


def test_a_tampered_index_is_not_trusted(store):
    store.create("original")
    store.list()
    tamper_index(store, "original", "tampered", fix_digest=False)
    assert store.list()[0].subject == "original"  # digest mismatch: rebuilt from the files


def test_a_well_formed_but_stale_index_is_caught_by_the_stamp(store):
    store.create("original")
    store.list()
    tamper_index(store, "original", "lie", fix_digest=True)
    hand_edit(store, 1, subject="truth")
    assert store.list()[0].subject == "truth"


def test_an_update_reads_and_writes_only_the_files_it_touches(store, monkeypatch):
    for i in range(30):
        store.create(f"t{i}")
    hub = store.create("hub")
    for i in range(1, 6):
        store.update(i, add_blocked_by=[hub.id])
    store.list()  # fold the log into the snapshot
    before = {p.name: os.stat(p).st_ino for p in store.root.glob("task_*.json")}
    index_before = os.stat(store.root / "index.json").st_ino

    parsed: list[str] = []
    real = store_module.task_from_bytes

    def counting(raw_bytes, name, expected_id=None):
        parsed.append(name)
        return real(raw_bytes, name, expected_id)

    monkeypatch.setattr(store_module, "task_from_bytes", counting)
    TaskStore(store.root).update(hub.id, status="completed")
    assert sorted(parsed) == sorted(["task_31.json", *(f"task_{i}.json" for i in range(1, 6))])
    after = {p.name: os.stat(p).st_ino for p in store.root.glob("task_*.json")}
    rewritten = {name for name in before if before[name] != after[name]}
    assert rewritten == {"task_31.json", *(f"task_{i}.json" for i in range(1, 6))}
    assert os.stat(store.root / "index.json").st_ino == index_before  # only the log grew
    assert (store.root / "index.log").read_text().count("\n") == 6


def test_reads_use_the_log_and_fold_it_when_it_grows(store, monkeypatch):
    store.create("a")
    store.list()
    snapshot = store.root / "index.json"
    folded_at = snapshot.stat().st_ino
    for name in "bcd":
        store.create(name)
    assert [t.subject for t in store.list()] == ["a", "b", "c", "d"]  # answered from snapshot + log
    assert snapshot.stat().st_ino == folded_at and (store.root / "index.log").exists()
    monkeypatch.setattr(store_module, "JOURNAL_LIMIT", 2)
    assert [t.subject for t in store.list()] == ["a", "b", "c", "d"]
    assert snapshot.stat().st_ino != folded_at and not (store.root / "index.log").exists()


# ------------------------------------------------------------------ crash recovery


def test_an_interrupted_multi_file_write_is_finished_by_the_next_operation(store, monkeypatch):
    hub = store.create("hub")
    for name in "abc":
        store.create(name, blocked_by=[hub.id])
    real = store_module.atomic_write
    calls = {"n": 0}

    def crash_midway(path, data):
        calls["n"] += 1
        if calls["n"] == 3:  # .txn.json and one task file written, then the process "dies"
            raise KeyboardInterrupt
        return real(path, data)

    monkeypatch.setattr(store_module, "atomic_write", crash_midway)
    with pytest.raises(KeyboardInterrupt):
        store.update(hub.id, status="completed")
    monkeypatch.setattr(store_module, "atomic_write", real)
    assert (store.root / ".txn.json").exists()
    # the next operation (here a read) completes the transaction before looking
    assert edges(TaskStore(store.root)) == {
        1: ([], [], "completed"),
        2: ([], [], "pending"),
        3: ([], [], "pending"),
        4: ([], [], "pending"),
    }
    assert not (store.root / ".txn.json").exists()
    assert store.check().ok


def test_a_foreign_txn_file_is_set_aside(store):
    store.create("a")
    (store.root / ".txn.json").write_text("nonsense")
    assert [t.id for t in store.list()] == [1]
    assert (store.root / ".txn.json.corrupt").exists()


# ------------------------------------------------------------------ snapshot


def test_context_snapshot_lists_in_progress_and_ready_and_counts_blocked(store):
    a = store.create("design the API", owner="agent")
    store.create("write docs")
    store.create("implement", blocked_by=[a.id])
    store.create("release", blocked_by=[3])
    store.update(a.id, status="in_progress")
    snap = store.context_snapshot()
    assert snap == (
        "<tasks>\n"
        "In progress:\n  #1 design the API (owner: agent)\n"
        "Ready:\n  #2 write docs\n"
        "Blocked: 2 tasks waiting on others.\n"
        "</tasks>"
    )
    store.update(2, status="completed")
    store.update(1, status="completed")
    assert "Ready:\n  #3 implement" in store.context_snapshot()
    assert "Blocked: 1 task waiting" in store.context_snapshot()


def test_context_snapshot_is_short_with_many_tasks_and_mentions_problems(store):
    for i in range(25):
        store.create(f"task {i}")
    write_raw(store, "task_99.json", "{")
    snap = store.context_snapshot()
    assert "… and 15 more" in snap
    assert "1 unreadable or inconsistent task file" in snap
    assert len(snap.splitlines()) < 20


def test_context_snapshot_is_empty_when_everything_is_done(store):
    store.create("a")
    store.update(1, status="completed")
    assert store.context_snapshot() == ""


def test_a_read_only_directory_is_still_readable(store, monkeypatch):
    store.create("a")
    store.create("b", blocked_by=[1])
    (store.root / "index.log").unlink(missing_ok=True)
    real_open = os.open

    def refuse_lock(path, flags, *args):
        if str(path).endswith(".lock"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", refuse_lock)
    reader = TaskStore(store.root)
    assert [(t.id, t.is_ready) for t in reader.list()] == [(1, True), (2, False)]
    assert reader.get(2).blockedBy == [1]
    assert not (store.root / "index.json").exists()  # nothing written without the lock
    with pytest.raises(PermissionError):
        reader.create("c")  # writing needs the lock: refused loudly, not done unsafely
