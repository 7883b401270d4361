"""The rooms keep their doors one-way: checked on the source, table-driven, and shown to bite.

Every top-level module or package of ``memagent`` is a room with a row in :data:`ALLOWED`: the
rooms it may import. Imports are resolved to module names first (``from memagent import x`` is
``memagent.x``; relative imports are made absolute), so no spelling slips past. Terminal
libraries are allowed only in ``cli`` and ``ui``, the SDK only in ``llm/anthropic.py``, Chroma
only in ``memory``. ``test_the_check_bites`` copies the source to a temporary folder, adds each
forbidden edge in turn, and sees the check fail.
"""

from __future__ import annotations

import ast
import functools
import shutil
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "memagent"

LEAVES = (
    "events",
    "markers",
    "errors",
    "fsutil",
    "redact",
    "models",
    "decoding",
    "paths",
    "protected",
    "gitsafe",
    "hook_settings",
    "jsontypes",
    "feature_settings",
)
# Each row is exactly the rooms the room imports today (tests/test_architecture_limits.py fails on
# a door nobody uses): a new edge is a decision, added here with the code that needs it.
ALLOWED: dict[str, set[str] | None] = {
    # leaves: shared vocabulary, importing nothing of memagent
    **{leaf: set() for leaf in LEAVES},
    "__init__": set(),
    "config": {"feature_settings", "hook_settings", "models", "paths"},
    "pricing": {"models"},
    "childenv": {"redact"},
    "__main__": {"cli"},
    "trust": {"config", "fsutil", "jsontypes", "protected", "redact"},
    # the gate: effects, the shell parse, rules and the policy; so tools can declare effects and
    # the loop can ask it without knowing any store
    "permissions": {"protected"},
    "todo": {"markers"},
    "checkpoints": {"fsutil", "gitsafe"},
    "commands_md": {"fsutil"},
    "claude_settings": {"config", "jsontypes", "paths"},
    # which instruction files a session reads (AGENTS.md, CLAUDE.md, rules), in their order
    "instructions": {"markers", "tools"},
    # the skills on disk: found in their folders, written by `memagent skills new` and reflection
    "skills": {"commands_md", "fsutil"},
    # the model adapter and the stores know nothing of the loop
    "llm": {"decoding", "errors", "jsontypes", "markers", "models", "pricing"},
    "tasks": {"fsutil", "jsontypes", "redact"},
    # texts into vectors: the embedder, its verified model files, the graphs, the vector cache;
    # nothing of cards or stores
    "embedding": {"errors", "fsutil", "jsontypes", "paths"},
    "memory": {"config", "embedding", "errors", "fsutil", "gitsafe", "jsontypes", "llm", "markers", "redact"},
    "tools": {
        "childenv",
        "config",
        "decoding",
        "fsutil",
        "gitsafe",
        "jsontypes",
        "paths",
        "permissions",
        "protected",
        "redact",
    },
    "context": {"config", "decoding", "events", "fsutil", "jsontypes", "llm", "markers", "redact"},
    # the loop: context, model and tool protocols, no store
    "agent": {"context", "decoding", "events", "jsontypes", "llm", "markers", "models", "permissions", "tools"},
    "mcp_bridge": {"childenv", "errors", "fsutil", "jsontypes", "tools"},
    # capabilities: each plugs stores and tools into the loop's Feature protocol
    "features": {
        "agent",
        "checkpoints",
        "childenv",
        "commands_md",
        "config",
        "context",
        "errors",
        "events",
        "feature_settings",
        "fsutil",
        "instructions",
        "jsontypes",
        "llm",
        "markers",
        "mcp_bridge",
        "memory",
        "permissions",
        "pricing",
        "skills",
        "tasks",
        "todo",
        "tools",
        "trust",
    },
    # the agent factory: features, tools, gate and context policy into an agent (a subagent too)
    # (models: whether the session's model knows a tool, e.g. Claude's memory tool)
    "factory": {
        "agent",
        "config",
        "context",
        "features",
        "jsontypes",
        "llm",
        "models",
        "permissions",
        "pricing",
        "todo",
        "tools",
    },
    # the session protocol's types, and the channel that carries them between a turn and a front end
    "protocol": {"events", "jsontypes"},
    "channel": {
        "agent",
        "events",
        "jsontypes",
        "permissions",
        "protocol",
        "tools",
    },
    # an open session: its state and the protocol's operations carried out on it
    "session": {
        "agent",
        "channel",
        "checkpoints",
        "claude_settings",
        "config",
        "context",
        "errors",
        "events",
        "features",
        "llm",
        "permissions",
        "pricing",
        "protocol",
        "todo",
    },
    # `memagent mcp serve`: the memory and task tools composed for an MCP client, over stdio
    "mcp_serve": {"config", "features", "mcp_bridge", "memory", "tasks", "tools", "trust"},
    "runtime": {
        "agent",
        "channel",
        "claude_settings",
        "config",
        "context",
        "errors",
        "factory",
        "features",
        "fsutil",
        "jsontypes",
        "llm",
        "memory",
        "paths",
        "permissions",
        "pricing",
        "session",
        "todo",
        "tools",
        "trust",
    },
    # the outside: rendering and the command line
    "ui": {
        "agent",
        "checkpoints",
        "childenv",
        "commands_md",
        "config",
        "context",
        "decoding",
        "events",
        "features",
        "fsutil",
        "jsontypes",
        "llm",
        "models",
        "paths",
        "permissions",
        "pricing",
        "protocol",
        "redact",
        "runtime",
        "session",
        "skills",
        "tools",
        "trust",
    },
    "cli": None,  # the entry point may import any room
}
TERMINAL = {"typer", "rich", "prompt_toolkit", "click", "pexpect"}
TERMINAL_ROOMS = {"cli", "ui"}
SDK_ONLY_IN = {"llm/anthropic.py"}
CHROMA_ROOMS = {"memory"}


def room_of(path: Path, src: Path) -> str:
    rel = path.relative_to(src)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def module_name(path: Path, src: Path) -> str:
    rel = path.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["memagent", *parts])


def resolved_imports(path: Path, src: Path) -> set[str]:
    """Absolute names of everything a file imports (``from memagent import x`` → ``memagent.x``)."""
    package = module_name(path, src) if path.name == "__init__.py" else module_name(path, src).rpartition(".")[0]
    return _imports_of_text(path.read_text(), package)


@functools.cache
def _imports_of_text(text: str, package: str) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names.update(
                f"{base}.{alias.name}" for alias in node.names if base in ("memagent",) or base.count(".") == 0
            )
    # the bare package is its __init__ (the version only): every room may import it
    return frozenset(n for n in names if n and n != "memagent")


def target_room(name: str) -> str | None:
    parts = name.split(".")
    if parts[0] != "memagent":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def violations(src: Path) -> list[str]:
    found: list[str] = []
    rooms = {room_of(p, src) for p in src.rglob("*.py")}
    for missing in sorted(rooms - set(ALLOWED) - {"__version__"}):
        found.append(f"room {missing!r} has no row in ALLOWED")
    for path in sorted(src.rglob("*.py")):
        room, rel = room_of(path, src), path.relative_to(src).as_posix()
        allowed = ALLOWED.get(room, set())
        for name in resolved_imports(path, src):
            top, target = name.split(".")[0], target_room(name)
            if top in TERMINAL and room not in TERMINAL_ROOMS:
                found.append(f"{rel} imports the terminal library {name}")
            if top == "anthropic" and rel not in SDK_ONLY_IN:
                found.append(f"{rel} imports the SDK ({name}); only llm/anthropic.py may")
            if top == "chromadb" and room not in CHROMA_ROOMS:
                found.append(f"{rel} imports chromadb; only memory/ may")
            if target and target not in (room, "__version__") and allowed is not None and target not in allowed:
                found.append(f"{rel} ({room}) imports {name}: {room} may import only {sorted(allowed)}")
    return found


def test_every_room_keeps_its_doors():
    assert violations(SRC) == []


def test_the_console_script_path_stays_light():
    """`memagent --help` and `memagent tasks …` go through cli/main.py: no SDK or Chroma at top level."""
    tree = ast.parse((SRC / "cli" / "main.py").read_text())
    top_level = {n.module for n in tree.body if isinstance(n, ast.ImportFrom)} | {
        a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names
    }
    assert not any(str(name).split(".")[0] in ("anthropic", "chromadb") for name in top_level)


FORBIDDEN_EDGES = [
    ("permissions/gate.py", "from memagent.tools import base"),
    ("permissions/shell.py", "from memagent import trust"),
    ("agent/loop.py", "from memagent import runtime"),
    ("agent/loop.py", "from memagent.memory import cards"),
    ("agent/loop.py", "import memagent.cli.main"),
    ("context/history.py", "from memagent.agent import loop"),
    ("llm/types.py", "from memagent.context import conversation"),
    ("tools/base.py", "from memagent.agent.loop import Agent"),
    ("tools/base.py", "from memagent.context import history"),
    ("memory/cards.py", "from memagent.tools import base"),
    ("memory/cards.py", "from memagent.features import memory"),
    ("embedding/embedders.py", "from memagent.memory import cards"),
    ("embedding/vector_cache.py", "import memagent.memory.store"),
    ("embedding/onnx_graph.py", "from ..memory.catalog import digest_of"),
    ("embedding/model_files.py", "from memagent import config"),
    ("tasks/graph.py", "from memagent.memory import cards"),
    ("ui/render.py", "from memagent.cli import main"),
    ("events.py", "from memagent import markers"),
    ("features/todos.py", "from memagent import runtime"),
    ("runtime.py", "from memagent.ui import render"),
    ("agent/loop.py", "import rich"),
    ("memory/cards.py", "from prompt_toolkit import prompt"),
    ("context/history.py", "import anthropic"),
    ("tasks/graph.py", "import chromadb"),
    ("agent/loop.py", "from . import feature\nfrom ..memory import cards"),
]


@pytest.mark.parametrize(
    "file, line", FORBIDDEN_EDGES, ids=[f"{f}:{edge.splitlines()[-1]}" for f, edge in FORBIDDEN_EDGES]
)
def test_the_check_bites(tmp_path, file, line):
    copy = tmp_path / "memagent"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert violations(copy) == []
    target = copy / file
    target.write_text(line + "\n" + target.read_text())
    assert violations(copy), f"adding {line!r} to {file} went unnoticed"


def test_a_new_room_without_a_row_is_caught(tmp_path):
    copy = tmp_path / "memagent"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "newroom.py").write_text("X = 1\n")
    assert any("newroom" in v for v in violations(copy))


def test_the_embedder_knows_nothing_of_memory():
    """``embedding`` turns texts into vectors: no card, store or catalog, not even inside a function,
    and its row in the table may never open that door."""
    assert "memory" not in (ALLOWED["embedding"] or set())
    package = SRC / "embedding"
    assert (package / "__init__.py").read_text().startswith('"""')
    reaching_memory = {
        path.relative_to(SRC).as_posix(): sorted(n for n in resolved_imports(path, SRC) if target_room(n) == "memory")
        for path in package.rglob("*.py")
    }
    assert {rel: names for rel, names in reaching_memory.items() if names} == {}
