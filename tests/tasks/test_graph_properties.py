"""Random operation sequences against the task store, checking every invariant after every step.

Two machines: one alone with an exact model of the expected graph, and one while a second
process writes to the same ``.tasks/`` directory (it adds tasks of its own, makes them wait for
ours, and finishes them); there, our model covers our tasks and the other process reports what
it expects of its own, so a lost update on either side shows up.

The invariants are checked by reading the JSON files directly (not through the store), holding
the directory lock so a multi-file write of the other process is never seen half-done.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from memagent.tasks import TaskBlocked, TaskError, TaskStore
from memagent.tasks.files import directory_lock

STATUSES = ["pending", "in_progress", "completed", "cancelled"]
TERMINAL = {"completed", "cancelled"}


def read_files(root: Path) -> dict[int, dict]:
    graph = {}
    for path in root.glob("task_*.json"):
        data = json.loads(path.read_text())
        assert path.name == f"task_{data['id']}.json"
        graph[data["id"]] = data
    return graph


def assert_graph_invariants(root: Path) -> dict[int, dict]:
    """Symmetric edges, no dangling edge, no cycle, finished tasks edge-free, ids below the mark."""
    if not root.exists():
        return {}
    with directory_lock(root, create=False):
        graph = read_files(root)
        high_water = int((root / ".highwater").read_text()) if graph else 0
    for tid, task in graph.items():
        assert task["status"] in STATUSES
        assert tid not in task["blockedBy"] and tid not in task["blocks"]
        for blocker in task["blockedBy"]:
            assert blocker in graph, f"#{tid} blocked by missing #{blocker}"
            assert tid in graph[blocker]["blocks"], f"#{tid}.blockedBy has #{blocker} but not vice versa"
        for dependent in task["blocks"]:
            assert dependent in graph, f"#{tid} blocks missing #{dependent}"
            assert tid in graph[dependent]["blockedBy"], f"#{tid}.blocks has #{dependent} but not vice versa"
        if task["status"] in TERMINAL:
            assert task["blockedBy"] == [] and task["blocks"] == [], f"finished #{tid} still has edges"
        assert len(set(task["blockedBy"])) == len(task["blockedBy"])
    # acyclic: Kahn's algorithm must consume every node
    indegree = {tid: len(t["blockedBy"]) for tid, t in graph.items()}
    queue = [tid for tid, n in indegree.items() if n == 0]
    seen = 0
    while queue:
        tid = queue.pop()
        seen += 1
        for dependent in graph[tid]["blocks"]:
            indegree[dependent] -= 1
            if indegree[dependent] == 0:
                queue.append(dependent)
    assert seen == len(graph), "the graph has a cycle"
    assert max(graph, default=0) <= high_water
    return graph


def reaches(edges: dict[int, set[int]], start: int, goal: int) -> bool:
    """Does ``start`` (transitively) block ``goal`` in the model?"""
    stack, seen = [start], set()
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(edges[node])
    return False


class TaskGraphMachine(RuleBasedStateMachine):
    """The store against a model: status and blockers of every task we created."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory(prefix="taskgraph-")
        self.root = Path(self.tmp.name) / ".tasks"
        self.store = TaskStore(self.root)
        self.status: dict[int, str] = {}
        self.blocked_by: dict[int, set[int]] = {}
        self.max_id = 0

    # -- model helpers
    def blocks(self) -> dict[int, set[int]]:
        out = {tid: set() for tid in self.status}
        for tid, blockers in self.blocked_by.items():
            for b in blockers:
                out[b].add(tid)
        return out

    def finish(self, tid: int, status: str) -> None:
        self.status[tid] = status
        self.blocked_by[tid] = set()
        for blockers in self.blocked_by.values():
            blockers.discard(tid)

    def pick(self, data_index: int) -> int:
        ids = sorted(self.status)
        return ids[data_index % len(ids)]

    # -- rules
    @rule(
        subject=st.text(min_size=1, max_size=12).filter(str.strip),
        picks=st.lists(st.integers(0, 50), max_size=3),
        bogus=st.booleans(),
    )
    def create(self, subject, picks, bogus):
        blockers = sorted({self.pick(p) for p in picks}) if self.status else []
        if bogus:
            blockers.append(self.max_id + 1000)
        try:
            task = self.store.create(subject, blocked_by=blockers)
        except TaskError as exc:
            assert bogus and "does not exist" in str(exc)
            return
        assert not bogus
        assert task.id > self.max_id, "an id was reused"
        self.max_id = task.id
        self.status[task.id] = "pending"
        self.blocked_by[task.id] = {b for b in blockers if self.status[b] not in TERMINAL}
        assert set(task.blockedBy) == self.blocked_by[task.id]

    @precondition(lambda self: self.status)
    @rule(a=st.integers(0, 50), b=st.integers(0, 50))
    def add_edge(self, a, b):
        blocker, dependent = self.pick(a), self.pick(b)
        expect_error = (
            blocker == dependent
            or self.status[dependent] in TERMINAL
            or (self.status[blocker] not in TERMINAL and reaches(self.blocks(), dependent, blocker))
        )
        try:
            self.store.update(dependent, add_blocked_by=[blocker])
        except TaskError as exc:
            assert expect_error, f"refused unexpectedly: {exc}"
            if blocker != dependent and self.status[dependent] not in TERMINAL:
                assert "cycle" in str(exc)
            return
        assert not expect_error, "accepted an edge that must be refused"
        if self.status[blocker] not in TERMINAL:
            self.blocked_by[dependent].add(blocker)

    @precondition(lambda self: self.status)
    @rule(a=st.integers(0, 50), status=st.sampled_from(STATUSES), force=st.booleans())
    def set_status(self, a, status, force):
        tid = self.pick(a)
        changing = status != self.status[tid]
        refused = changing and status in ("in_progress", "completed") and bool(self.blocked_by[tid]) and not force
        try:
            task = self.store.update(tid, status=status, force=force)
        except TaskBlocked as exc:
            assert refused, f"refused unexpectedly: {exc}"
            assert exc.task.id == tid
            return
        assert not refused, "a blocked task was started/finished without force"
        if status in TERMINAL:
            self.finish(tid, status)
        else:
            self.status[tid] = status
        assert task.status == status

    @precondition(lambda self: self.status)
    @rule(a=st.integers(0, 50), owner=st.text(max_size=8))
    def set_owner(self, a, owner):
        tid = self.pick(a)
        assert self.store.update(tid, owner=owner).owner == owner

    @rule(damage=st.sampled_from(["drop snapshot", "drop log", "tear log", "garble snapshot"]))
    def damage_the_cache(self, damage):
        """The cache may be lost or torn at any time; answers must not change."""
        snapshot, log = self.root / "index.json", self.root / "index.log"
        if damage == "drop snapshot":
            snapshot.unlink(missing_ok=True)
        elif damage == "drop log":
            log.unlink(missing_ok=True)
        elif damage == "tear log" and log.exists():
            data = log.read_bytes()
            log.write_bytes(data[: len(data) // 2])
        elif damage == "garble snapshot" and snapshot.exists():
            data = snapshot.read_bytes()
            snapshot.write_bytes(data[:-3] + b"]]]")

    # -- checks
    @invariant()
    def files_satisfy_the_invariants(self):
        assert_graph_invariants(self.root)

    @invariant()
    def store_matches_the_model(self):
        tasks = {t.id: t for t in TaskStore(self.root).list()}
        assert set(tasks) == set(self.status)
        blocks = self.blocks()
        for tid, task in tasks.items():
            assert task.status == self.status[tid]
            assert set(task.blockedBy) == self.blocked_by[tid]
            assert set(task.blocks) == blocks[tid]
            assert task.is_ready == (self.status[tid] == "pending" and not self.blocked_by[tid])

    def teardown(self):
        self.tmp.cleanup()


TaskGraphMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_task_graph_alone = TaskGraphMachine.TestCase


# The second writer: its own tasks, made to wait for ours, started and finished (with force).
OTHER_WRITER = textwrap.dedent(
    """
    import json, random, sys
    from pathlib import Path
    from memagent.tasks import TaskError, TaskStore
    root, seed, steps = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    store = TaskStore(root)
    mine = {}
    for _ in range(steps):
        roll = rng.random()
        if roll < 0.35 or not mine:
            task = store.create(f"other-{rng.random():.6f}")
            mine[task.id] = task.status
        elif roll < 0.75:
            theirs = [t.id for t in store.list() if t.subject.startswith("main-") and not t.terminal]
            if theirs:
                target = rng.choice(sorted(mine))
                try:
                    store.update(target, add_blocked_by=[rng.choice(theirs)])
                except TaskError:
                    pass  # e.g. our task is finished already, or theirs just got finished
        else:
            target = rng.choice(sorted(mine))
            status = rng.choice(["in_progress", "completed", "pending"])
            store.update(target, status=status, force=True)
            mine[target] = status
    print(json.dumps(mine))
    """
)


class ConcurrentTaskGraphMachine(TaskGraphMachine):
    """The same rules while another process writes to the same directory."""

    @initialize(seed=st.integers(0, 2**16))
    def start_other_writer(self, seed):
        self.store.create("main-anchor")  # makes the directory and gives the other side a target
        self.status[1], self.blocked_by[1], self.max_id = "pending", set(), 1
        self.other = subprocess.Popen(
            [sys.executable, "-c", OTHER_WRITER, str(self.root), str(seed), "60"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def mine(self, tasks):
        return {tid: t for tid, t in tasks.items() if t.subject.startswith("main-")}

    @rule(
        subject=st.text(min_size=1, max_size=12).filter(str.strip),
        picks=st.lists(st.integers(0, 50), max_size=3),
        bogus=st.booleans(),
    )
    def create(self, subject, picks, bogus):
        super().create("main-" + subject, picks, bogus)

    @invariant()
    def store_matches_the_model(self):
        tasks = {t.id: t for t in TaskStore(self.root).list()}
        ours = self.mine(tasks)
        assert set(ours) == set(self.status)
        blocks = self.blocks()
        for tid, task in ours.items():
            assert task.status == self.status[tid], f"lost update on #{tid}"
            assert set(task.blockedBy) == self.blocked_by[tid]
            assert set(task.blocks) & set(ours) == blocks[tid]
            for dependent in set(task.blocks) - set(ours):  # the other process's tasks waiting on ours
                assert tid in tasks[dependent].blockedBy

    def teardown(self):
        if not hasattr(self, "other"):
            return super().teardown()
        try:
            out, err = self.other.communicate(timeout=60)
            assert self.other.returncode == 0, err
            expected = {int(k): v for k, v in json.loads(out).items()}
            tasks = {t.id: t for t in TaskStore(self.root).list()}
            for tid, status in expected.items():
                assert tasks[tid].subject.startswith("other-")
                assert tasks[tid].status == status, f"lost update on the other process's #{tid}"
            assert len(tasks) == len(expected) + len(self.status), "a create was lost or an id shared"
            assert_graph_invariants(self.root)
        finally:
            if self.other.poll() is None:
                self.other.kill()
                self.other.wait()
            super().teardown()


ConcurrentTaskGraphMachine.TestCase.settings = settings(
    max_examples=12, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_task_graph_with_a_concurrent_writer = ConcurrentTaskGraphMachine.TestCase
