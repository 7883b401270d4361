"""`check --fix` logic on arbitrary hand-mangled graphs: repairs always restore the invariants."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memagent.tasks.graph import find_cycle, graph_problems, is_acyclic, plan_repairs, tree_lines
from memagent.tasks.model import Task

STATUSES = ["pending", "in_progress", "completed", "cancelled"]


@st.composite
def mangled_graphs(draw):
    """Up to 12 tasks whose edge lists name anything: themselves, missing ids, one side only."""
    ids = draw(st.lists(st.integers(1, 15), min_size=1, max_size=12, unique=True))
    names = st.integers(1, 18)  # ids 16-18 never exist
    tasks = {}
    for tid in ids:
        tasks[tid] = Task(
            id=tid,
            subject=f"t{tid}",
            status=draw(st.sampled_from(STATUSES)),
            blockedBy=sorted(set(draw(st.lists(names, max_size=3)))),
            blocks=sorted(set(draw(st.lists(names, max_size=3)))),
        )
    return tasks


def independent_violations(tasks: dict[int, Task]) -> list[str]:
    out = []
    for tid, t in tasks.items():
        for b in t.blockedBy:
            if b not in tasks or tid not in tasks[b].blocks or b == tid:
                out.append(f"{tid}.blockedBy {b}")
        for d in t.blocks:
            if d not in tasks or tid not in tasks[d].blockedBy or d == tid:
                out.append(f"{tid}.blocks {d}")
        if t.terminal and (t.blockedBy or t.blocks):
            out.append(f"{tid} finished with edges")
    if not is_acyclic(tasks):
        out.append("cycle")
    return out


@settings(max_examples=300, deadline=None)
@given(mangled_graphs())
def test_repairs_restore_every_invariant(tasks):
    repair = plan_repairs(tasks)
    fixed = {**tasks, **repair.changed}
    assert independent_violations(fixed) == []
    assert graph_problems(fixed) == []
    assert bool(repair.actions) == bool(graph_problems(tasks))
    # every task is kept, and nothing but edges changed
    assert set(fixed) == set(tasks)
    for tid, task in fixed.items():
        assert (task.status, task.subject) == (tasks[tid].status, tasks[tid].subject)


@settings(max_examples=300, deadline=None)
@given(mangled_graphs())
def test_problems_are_reported_exactly_when_invariants_fail(tasks):
    problems = graph_problems(tasks)
    assert bool(problems) == bool(independent_violations(tasks))
    assert all(p.startswith("task_") and ".json: " in p for p in problems)


@settings(max_examples=200, deadline=None)
@given(mangled_graphs())
def test_tree_shows_every_task_and_terminates(tasks):
    lines = tree_lines(tasks)
    shown = {line.id for line in lines if not line.missing and not line.repeat}
    assert shown == set(tasks)
    assert sum(1 for line in lines if not line.missing and not line.repeat) == len(tasks)  # expanded once each
    assert (find_cycle(tasks) is None) == is_acyclic(tasks)


def test_a_consistent_edge_between_open_tasks_survives_repairs():
    tasks = {
        1: Task(1, "a", blocks=[2]),
        2: Task(2, "b", blockedBy=[1], blocks=[99]),
        3: Task(3, "c", status="completed", blockedBy=[1]),
    }
    repair = plan_repairs(tasks)
    fixed = {**tasks, **repair.changed}
    assert fixed[1].blocks == [2] and fixed[2].blockedBy == [1]
    assert fixed[2].blocks == [] and fixed[3].blockedBy == []
    assert "task_3.json: is completed but still lists blockedBy #1 — removed" in repair.actions
