"""The limits the import table alone does not keep: no door left open that nobody uses, no cycle
between the modules of one room, no module over 600 lines, and a room list in
``docs/architecture.md`` that matches the table. Each check is shown to bite on a copy of the source."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from test_architecture import ALLOWED, SRC, module_name, room_of, target_room

MAX_LINES = 600
DOC = SRC.parents[1] / "docs" / "architecture.md"


# --------------------------------------------------------------------------- unused doors


def used_edges(src: Path) -> dict[str, set[str]]:
    """Which other rooms each room imports, anywhere in its files."""
    from test_architecture import resolved_imports

    used: dict[str, set[str]] = {}
    for path in src.rglob("*.py"):
        room = room_of(path, src)
        for name in resolved_imports(path, src):
            target = target_room(name)
            if target and target not in (room, "__version__", "__init__"):
                used.setdefault(room, set()).add(target)
    return used


def unused_allowances(src: Path) -> list[str]:
    used = used_edges(src)
    return [
        f"{room} may import {target} but never does"
        for room, allowed in sorted(ALLOWED.items())
        if allowed is not None
        for target in sorted(allowed - used.get(room, set()))
    ]


# --------------------------------------------------------------------------- cycles


def _module_level_imports(path: Path, src: Path, modules: set[str]) -> set[str]:
    """Modules imported when this one is imported: top-level statements (inside ``if``/``try``
    too), not under ``TYPE_CHECKING`` and not inside functions. ``from package import mod``
    is ``package.mod`` when that is a module (the package itself is already loading)."""
    package = module_name(path, src) if path.name == "__init__.py" else module_name(path, src).rpartition(".")[0]
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                submodules = {f"{base}.{alias.name}" for alias in node.names} & modules
                found.update(submodules or {base})
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for block in ("body", "orelse", "finalbody"):
                    visit(getattr(node, block, []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(ast.parse(path.read_text()).body)
    return found


def room_cycles(src: Path) -> list[list[str]]:
    """Import cycles between modules of the same room (strongly connected components of two or more)."""
    modules = {module_name(p, src): p for p in src.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        room = room_of(path, src)
        graph[name] = {
            imported
            for imported in _module_level_imports(path, src, set(modules))
            if imported in modules and imported != name and room_of(modules[imported], src) == room
        }
    return _components(graph)


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in order:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], order[nxt])
        if low[node] == order[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return cycles


# --------------------------------------------------------------------------- size and docs


def oversized(src: Path) -> list[str]:
    return [
        f"{p.relative_to(src)}: {n} lines"
        for p in sorted(src.rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    ]


def rooms_in_doc(text: str) -> set[str]:
    """The rooms named at the start of a line of the doc's room map (``name.py`` or ``name/``)."""
    block = text.split("```", 2)[1] if "```" in text else text
    names = set()
    for line in block.splitlines():
        first = line[2:].split(" ", 1)[0] if line.startswith("  ") and not line.startswith("   ") else ""
        if first.endswith("/"):
            names.add(first[:-1])
        elif first.endswith(".py"):
            names.add(first[:-3])
    return names


def doors_in_doc(text: str) -> dict[str, set[str] | None]:
    """The doc's import table (``| `room` | `a`, `b` |``) and its list of leaves, as a table."""
    doors: dict[str, set[str] | None] = {}
    for line in text.splitlines():
        if line.startswith("Leaves import nothing"):
            doors.update({leaf: set() for leaf in line.split(":", 1)[1].replace("`", "").strip(" .").split(", ")})
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`"):
            doors[cells[0].strip("`")] = (
                None if cells[1] == "any room" else {name.strip("` ") for name in cells[1].split(",") if name.strip()}
            )
    return doors


def rooms_of_source(src: Path) -> set[str]:
    return {room_of(p, src) for p in src.rglob("*.py")} - {"__init__", "__main__", "__version__"}


# --------------------------------------------------------------------------- the checks


def test_every_door_in_the_table_is_used():
    assert unused_allowances(SRC) == []


def test_no_cycle_between_the_modules_of_a_room():
    assert room_cycles(SRC) == []


def test_no_module_is_over_the_size_limit():
    assert oversized(SRC) == []


def test_the_architecture_doc_names_every_room_and_no_other():
    assert rooms_in_doc(DOC.read_text()) == rooms_of_source(SRC)


def test_the_architecture_doc_shows_the_import_table_as_it_is():
    expected = {room: doors for room, doors in ALLOWED.items() if room != "__init__"}
    assert doors_in_doc(DOC.read_text()) == expected


# --------------------------------------------------------------------------- they bite


@pytest.fixture
def copy(tmp_path) -> Path:
    target = tmp_path / "memagent"
    shutil.copytree(SRC, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def test_a_cycle_inside_a_room_is_caught(copy):
    loop = copy / "agent" / "loop.py"
    (copy / "agent" / "cyclic_helper.py").write_text("from memagent.agent import loop\n")
    loop.write_text("from memagent.agent import cyclic_helper\n" + loop.read_text())
    assert any("memagent.agent.cyclic_helper" in cycle for cycle in room_cycles(copy))


def test_an_import_under_type_checking_or_in_a_function_is_no_cycle(copy):
    (copy / "agent" / "late.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from memagent.agent import loop\n"
        "def f():\n    from memagent.agent import loop\n"
    )
    loop = copy / "agent" / "loop.py"
    before = room_cycles(copy)
    loop.write_text("from memagent.agent import late\n" + loop.read_text())
    assert room_cycles(copy) == before


def test_a_module_over_the_limit_is_caught(copy):
    (copy / "llm" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    assert f"llm/long.py: {MAX_LINES + 1} lines" in oversized(copy)
    (copy / "llm" / "long.py").write_text("x = 1\n" * MAX_LINES)
    assert not any(problem.startswith("llm/long.py") for problem in oversized(copy))


def test_a_door_nobody_uses_is_caught(monkeypatch):
    monkeypatch.setitem(ALLOWED, "todo", {*ALLOWED["todo"], "paths"})
    assert "todo may import paths but never does" in unused_allowances(SRC)


def test_a_room_missing_from_the_doc_is_caught(copy):
    (copy / "newroom.py").write_text("X = 1\n")
    assert rooms_of_source(copy) - rooms_in_doc(DOC.read_text()) == {"newroom"}


def test_a_door_the_doc_does_not_show_is_caught(monkeypatch):
    monkeypatch.setitem(ALLOWED, "todo", {*ALLOWED["todo"], "paths"})
    expected = {room: doors for room, doors in ALLOWED.items() if room != "__init__"}
    assert doors_in_doc(DOC.read_text()) != expected
