"""The rooms keep their doors one-way (DESIGN §2): checked on the source, not by convention."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "memagent"
CORE = ["agent", "context", "tasks", "memory", "tools", "llm", "todo.py", "events.py", "config.py", "fsutil.py"]
TERMINAL_OR_CLI = {"typer", "rich", "prompt_toolkit", "click"}
OUTER_ROOMS = ("memagent.cli", "memagent.ui", "memagent.runtime")


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def files_of(room: str) -> list[Path]:
    target = SRC / room
    return [target] if target.is_file() else sorted(target.rglob("*.py"))


@pytest.mark.parametrize("room", CORE)
def test_core_rooms_import_no_terminal_library_and_no_outer_room(room):
    for path in files_of(room):
        for name in imports_of(path):
            top = name.split(".")[0]
            assert top not in TERMINAL_OR_CLI, f"{path.relative_to(SRC)} imports {name}"
            assert not name.startswith(OUTER_ROOMS), f"{path.relative_to(SRC)} imports {name}"


def test_only_the_adapter_imports_the_sdk():
    importers = [p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py") if any(
        n.split(".")[0] == "anthropic" for n in imports_of(p))]
    assert importers == ["llm/anthropic.py"]


def test_the_loop_knows_nothing_of_stores():
    for path in files_of("agent"):
        for name in imports_of(path):
            assert not name.startswith(("memagent.tasks", "memagent.memory", "memagent.todo", "chromadb")), (path, name)


def test_stores_know_nothing_of_the_loop():
    for room in ("tasks", "memory", "todo.py"):
        for path in files_of(room):
            for name in imports_of(path):
                assert not name.startswith(("memagent.agent", "memagent.context")), (path, name)
