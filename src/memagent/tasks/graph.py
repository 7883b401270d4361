"""Pure graph logic over loaded tasks: paths, cycles, consistency problems, repairs, trees.

Nothing here touches the disk. ``tasks`` is always a mapping id -> :class:`Task` of the readable
tasks; ``unreadable`` the ids whose files exist but are malformed (edges to them are neither
"missing" nor followed).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from memagent.tasks.model import IN_PROGRESS, TERMINAL, Task, file_name


def fmt_ids(ids: Iterable[int]) -> str:
    return ", ".join(f"#{i}" for i in ids)


def find_path(start: int, goal: int, successors: Callable[[int], Iterable[int]]) -> list[int] | None:
    """Shortest path start -> ... -> goal following ``successors`` (breadth first), or None."""
    if start == goal:
        return [start]
    parent: dict[int, int] = {start: start}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in successors(node):
            if nxt in parent:
                continue
            parent[nxt] = node
            if nxt == goal:
                path = [goal]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return path[::-1]
            queue.append(nxt)
    return None


def describe_cycle(path: list[int]) -> str:
    """``[2, 5, 2]`` -> ``#2 → #5 → #2`` (read "blocks")."""
    return " → ".join(f"#{i}" for i in path)


def find_cycle(tasks: Mapping[int, Task]) -> list[int] | None:
    """One cycle along ``blocks`` edges between readable tasks, as a closed path, or None."""
    colour: dict[int, int] = {}  # 1 = on the stack, 2 = done
    for root in sorted(tasks):
        if root in colour:
            continue
        stack: list[tuple[int, Iterable[int]]] = [(root, iter(tasks[root].blocks))]
        on_path = [root]
        colour[root] = 1
        while stack:
            node, children = stack[-1]
            advanced = False
            for child in children:
                if child not in tasks:
                    continue
                if colour.get(child) == 1:
                    return on_path[on_path.index(child) :] + [child]
                if child not in colour:
                    colour[child] = 1
                    stack.append((child, iter(tasks[child].blocks)))
                    on_path.append(child)
                    advanced = True
                    break
            if not advanced:
                colour[node] = 2
                stack.pop()
                on_path.pop()
    return None


@dataclass
class Repair:
    """The outcome of :func:`plan_repairs`: changed copies of tasks and what was done, by file."""

    changed: dict[int, Task]
    actions: list[str]


def graph_problems(tasks: Mapping[int, Task], unreadable: Iterable[int] = ()) -> list[str]:
    """Every inconsistency between readable tasks, one line each, starting with a file name."""
    unreadable = set(unreadable)
    if _edges_look_consistent(tasks, unreadable) and is_acyclic(tasks):
        return []  # the common case, checked cheaply; the detailed walk names what is wrong
    return _walk_edges(tasks, unreadable, fix=None)


def _edges_look_consistent(tasks: Mapping[int, Task], unreadable: set[int]) -> bool:
    get = tasks.get
    for tid, task in tasks.items():
        if task.status in TERMINAL:
            if task.blockedBy or task.blocks:
                return False
            continue
        for other in task.blockedBy:
            peer = get(other)
            if peer is None:
                if other not in unreadable:
                    return False
            elif other == tid or peer.status in TERMINAL or tid not in peer.blocks:
                return False
        for other in task.blocks:
            peer = get(other)
            if peer is None:
                if other not in unreadable:
                    return False
            elif other == tid or peer.status in TERMINAL or tid not in peer.blockedBy:
                return False
    return True


def is_acyclic(tasks: Mapping[int, Task]) -> bool:
    """Kahn's algorithm over ``blocks`` edges between readable tasks."""
    indegree = dict.fromkeys(tasks, 0)
    for task in tasks.values():
        for dependent in task.blocks:
            if dependent in indegree:
                indegree[dependent] += 1
    queue = [tid for tid, n in indegree.items() if n == 0]
    done = 0
    while queue:
        tid = queue.pop()
        done += 1
        for dependent in tasks[tid].blocks:
            if dependent in indegree:
                indegree[dependent] -= 1
                if indegree[dependent] == 0:
                    queue.append(dependent)
    return done == len(tasks)


def plan_repairs(tasks: Mapping[int, Task], unreadable: Iterable[int] = ()) -> Repair:
    """The smallest edits that restore the invariants.

    * an edge to a missing task, or to itself, is dropped;
    * an edge touching a completed/cancelled task is dropped on both sides (it is satisfied);
    * a one-sided edge between two open tasks gets its missing half (the dependency is kept:
      forgetting a real dependency is worse than keeping one too many);
    * a cycle is broken by dropping the edge that closes it, until none is left.

    Edges to unreadable files are left alone: that file has to be fixed by hand first.
    """
    work = {tid: t.copy() for tid, t in tasks.items()}
    changed: dict[int, Task] = {}
    actions: list[str] = []

    def touch(task: Task) -> None:
        changed[task.id] = task

    _walk_edges(work, set(unreadable), fix=(touch, actions))
    while (cycle := find_cycle(work)) is not None:
        blocker, dependent = cycle[-2], cycle[-1]
        _drop_edge(work, blocker, dependent, touch)
        actions.append(
            f"{file_name(dependent)}: removed #{blocker} from blockedBy to break the cycle {describe_cycle(cycle)}"
        )
    return Repair(changed=changed, actions=actions)


def _drop_edge(work: Mapping[int, Task], blocker: int, dependent: int, touch: Callable[[Task], None]) -> None:
    if blocker in work and dependent in work[blocker].blocks:
        work[blocker].blocks.remove(dependent)
        touch(work[blocker])
    if dependent in work and blocker in work[dependent].blockedBy:
        work[dependent].blockedBy.remove(blocker)
        touch(work[dependent])


def _add_half(work: Mapping[int, Task], blocker: int, dependent: int, touch: Callable[[Task], None]) -> None:
    if dependent not in work[blocker].blocks:
        work[blocker].blocks = sorted([*work[blocker].blocks, dependent])
        touch(work[blocker])
    if blocker not in work[dependent].blockedBy:
        work[dependent].blockedBy = sorted([*work[dependent].blockedBy, blocker])
        touch(work[dependent])


def _walk_edges(
    work: Mapping[int, Task],
    unreadable: set[int],
    fix: tuple[Callable[[Task], None], list[str]] | None,
) -> list[str]:
    """Classify every edge; report it, or (with ``fix``) repair it and record the action."""
    problems: list[str] = []
    for tid in sorted(work):
        task = work[tid]
        for key, other_key in (("blockedBy", "blocks"), ("blocks", "blockedBy")):
            for other in list(getattr(task, key)):
                # (blocker, dependent) of the edge this entry describes
                edge = (other, tid) if key == "blockedBy" else (tid, other)
                message, action = _classify(work, unreadable, task, key, other, other_key)
                if message is None:
                    continue
                if fix is None:
                    problems.append(message)
                    continue
                touch, actions = fix
                blocker, dependent = edge
                if action == "drop":
                    _drop_edge(work, blocker, dependent, touch)
                    actions.append(f"{message} — removed")
                elif action == "mirror":
                    _add_half(work, blocker, dependent, touch)
                    actions.append(f"{message} — added the missing half")
    if fix is None:
        cycle = find_cycle(work)
        if cycle is not None:
            problems.append(f"{file_name(cycle[0])}: dependency cycle {describe_cycle(cycle)}")
    return problems


def _classify(
    work: Mapping[int, Task], unreadable: set[int], task: Task, key: str, other: int, other_key: str
) -> tuple[str | None, str]:
    name = file_name(task.id)
    if other == task.id:
        return f"{name}: {key} names the task itself", "drop"
    if other in unreadable:
        return None, ""
    if other not in work:
        return f"{name}: {key} names #{other}, which does not exist", "drop"
    peer = work[other]
    if key == "blockedBy" and peer.terminal:
        return f"{name}: still blocked by #{other}, which is {peer.status}", "drop"
    if key == "blockedBy" and task.terminal:
        return f"{name}: is {task.status} but still lists blockedBy #{other}", "drop"
    if key == "blocks" and (task.terminal or peer.terminal):
        if task.id in peer.blockedBy:
            return None, ""  # reported once, from the blockedBy side
        done = task if task.terminal else peer
        return f"{name}: blocks #{other} although #{done.id} is {done.status}", "drop"
    if task.id not in getattr(peer, other_key):
        return (
            f"{name}: {key} has #{other} but {file_name(other)} lacks #{task.id} in {other_key} (one-sided edge)",
            "mirror",
        )
    return None, ""


@dataclass(frozen=True)
class TreeLine:
    """One line of the dependency tree in pre-order: a task under the task that blocks it."""

    id: int
    depth: int
    repeat: bool = False  # already shown (and expanded) above
    missing: bool = False  # named by an edge but not a readable task
    detached: bool = False  # not reachable from any root: a cycle or a one-sided edge


def tree_lines(tasks: Mapping[int, Task]) -> list[TreeLine]:
    """Roots (nothing readable blocks them) first, each followed by what it blocks, depth first.

    A task blocked by several others appears under each of them but is expanded once. Tasks left
    over after the walk (cycles, one-sided edges in hand-edited files) follow, flagged ``detached``,
    so nothing is hidden and nothing loops.
    """
    lines: list[TreeLine] = []
    expanded: set[int] = set()

    def walk(root: int, detached: bool) -> None:
        stack = [(root, 0)]
        while stack:
            tid, depth = stack.pop()
            if tid not in tasks:
                lines.append(TreeLine(tid, depth, missing=True, detached=detached))
                continue
            if tid in expanded:
                lines.append(TreeLine(tid, depth, repeat=True, detached=detached))
                continue
            expanded.add(tid)
            lines.append(TreeLine(tid, depth, detached=detached))
            for child in sorted(tasks[tid].blocks, reverse=True):
                if child != tid:
                    stack.append((child, depth + 1))

    roots = [tid for tid in sorted(tasks) if not any(b in tasks for b in tasks[tid].blockedBy)]
    for root in roots:
        walk(root, detached=False)
    for tid in sorted(tasks):
        if tid not in expanded:
            walk(tid, detached=True)
    return lines


def snapshot_text(tasks: Mapping[int, Task], problems: int = 0, limit: int = 10) -> str:
    """The short block re-injected after a compaction: in progress, ready, how many blocked."""
    ordered = [tasks[tid] for tid in sorted(tasks)]
    active = [t for t in ordered if t.status == IN_PROGRESS]
    ready = [t for t in ordered if t.is_ready]
    blocked = [t for t in ordered if t.is_blocked and t.status != IN_PROGRESS]
    if not (active or ready or blocked or problems):
        return ""
    out = ["<tasks>"]
    out += _snapshot_section("In progress", active, limit)
    out += _snapshot_section("Ready", ready, limit)
    if blocked:
        out.append(f"Blocked: {len(blocked)} task{'s' if len(blocked) != 1 else ''} waiting on others.")
    if problems:
        out.append(
            f"({problems} unreadable or inconsistent task file{'s' if problems != 1 else ''}; see `memagent tasks check`.)"
        )
    out.append("</tasks>")
    return "\n".join(out)


def _snapshot_section(title: str, items: list[Task], limit: int) -> list[str]:
    if not items:
        return []
    lines = [f"{title}:"]
    for task in items[:limit]:
        owner = f" (owner: {task.owner})" if task.owner else ""
        blocked = f" [blocked by {fmt_ids(task.blockedBy)}]" if task.blockedBy else ""
        lines.append(f"  #{task.id} {task.subject}{owner}{blocked}")
    if len(items) > limit:
        lines.append(f"  … and {len(items) - limit} more")
    return lines
