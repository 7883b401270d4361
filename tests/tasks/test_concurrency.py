"""Several processes on one `.tasks/` directory: no lost update, no shared id."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from memagent.tasks import TaskStore

WORKER = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    from memagent.tasks import TaskStore
    root, go, name, count, hub, sink = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    while not go.exists():
        time.sleep(0.001)
    store = TaskStore(root)
    made = []
    for i in range(count):
        task = store.create(f"{name}-{i}", blocked_by=[hub])      # rewrites the hub's file
        store.update(sink, add_blocked_by=[task.id])               # rewrites the sink's file
        store.update(task.id, owner=name)
        made.append(task.id)
    print(json.dumps(made))
    """
)


def test_parallel_writers_lose_nothing(tmp_path: Path):
    root = tmp_path / ".tasks"
    store = TaskStore(root)
    hub = store.create("hub")
    sink = store.create("sink")
    go = tmp_path / "go"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(root), str(go), name, "40", str(hub.id), str(sink.id)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("alpha", "beta", "gamma")
    ]
    time.sleep(0.3)  # let all three import and wait at the start line
    go.touch()
    made: dict[str, list[int]] = {}
    for name, proc in zip(("alpha", "beta", "gamma"), workers):
        out, err = proc.communicate(timeout=90)
        assert proc.returncode == 0, err
        made[name] = json.loads(out)

    all_ids = [i for ids in made.values() for i in ids]
    assert len(all_ids) == len(set(all_ids)) == 120, "two processes were handed the same id"
    tasks = {t.id: t for t in TaskStore(root).list()}
    assert TaskStore(root).problems() == []
    assert sorted(tasks[hub.id].blocks) == sorted(all_ids), "an edge on the hub was lost"
    assert sorted(tasks[sink.id].blockedBy) == sorted(all_ids), "an edge on the sink was lost"
    for name, ids in made.items():
        for tid in ids:
            assert tasks[tid].owner == name and tasks[tid].blockedBy == [hub.id] and tasks[tid].blocks == [sink.id]
    # the index agrees with the files after all that
    fresh = {t.id: t.to_dict() for t in TaskStore(root).list()}
    (root / "index.json").unlink()
    rebuilt = {t.id: t.to_dict() for t in TaskStore(root).list()}
    assert fresh == rebuilt

    # completing the hub releases all 120 in one step
    TaskStore(root).update(hub.id, status="completed")
    assert sorted(t.id for t in TaskStore(root).ready()) == sorted(all_ids)


CRASHER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from memagent.tasks import TaskStore
    root, hub, deps = Path(sys.argv[1]), int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")]
    store = TaskStore(root)
    print("ready", flush=True)
    while True:  # each step rewrites many files at once; we are killed somewhere in the middle
        store.update(hub, status="completed")
        store.update(hub, status="pending", add_blocks=deps)
    """
)


def assert_symmetric(root: Path) -> dict[int, dict]:
    graph = {int(p.name[5:-5]): json.loads(p.read_text()) for p in root.glob("task_*.json")}
    for tid, task in graph.items():
        for blocker in task["blockedBy"]:
            assert tid in graph[blocker]["blocks"], f"#{tid} blockedBy #{blocker} is one-sided"
        for dependent in task["blocks"]:
            assert tid in graph[dependent]["blockedBy"], f"#{tid} blocks #{dependent} is one-sided"
    return graph


def test_kill_9_in_the_middle_of_a_write_leaves_a_whole_graph(tmp_path: Path):
    root = tmp_path / ".tasks"
    store = TaskStore(root)
    hub = store.create("hub")
    deps = [store.create(f"dep {i}", blocked_by=[hub.id]).id for i in range(40)]
    for delay in (0.05, 0.11, 0.17, 0.23, 0.29):
        child = subprocess.Popen(
            [sys.executable, "-c", CRASHER, str(root), str(hub.id), ",".join(map(str, deps))],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout.readline().strip() == "ready"
        time.sleep(delay)
        child.kill()  # SIGKILL: no cleanup, no finally blocks
        child.wait()
        tasks = {t.id: t for t in TaskStore(root).list()}  # the next user finishes any interrupted write
        assert not (root / ".txn.json").exists()
        graph = assert_symmetric(root)
        assert set(tasks) == set(graph) == {hub.id, *deps}
        hub_state = graph[hub.id]
        if hub_state["status"] == "completed":
            assert hub_state["blocks"] == [] and all(graph[d]["blockedBy"] == [] for d in deps)
        else:
            assert all(graph[d]["blockedBy"] in ([], [hub.id]) for d in deps)
        assert TaskStore(root).check().ok
