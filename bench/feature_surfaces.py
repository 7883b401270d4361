"""Which files outside ``features/`` name each capability or handle one of its surfaces.

A rough measure of how far a capability is "one module plus composition": for each feature, a
regular expression of the names that only it (its module, its classes, its slash command, its
transcript record, its settings, its tool names) uses, matched against the code of every source
file of ``src/memagent`` outside ``features/`` (docstrings and comments left out: prose that
mentions a feature couples nothing). Its own domain room (``todo.py`` for todos, ``tasks/`` for
tasks, …) is listed apart: that is where a capability's store belongs.

    python bench/feature_surfaces.py                 # this tree's table, as Markdown
    python bench/feature_surfaces.py OTHER/src/memagent   # another tree's (e.g. a `git archive` of main)
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "memagent"

CAPABILITIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "todos": (
        r"features\.todos|TodoFeature|TodoManager|cmd_todos|last_todo|[\"']todo[\"']|\.todo\b|/todos|todo tool",
        ("todo.py",),
    ),
    "tasks": (
        r"features\.tasks|TaskGraphFeature|cmd_tasks|/tasks\b|task_create|task_update|task graph",
        ("tasks/",),
    ),
    "checkpoints/rewind": (
        r"features\.checkpoints|CheckpointFeature|[\"']checkpoint[\"']|checkpoints_enabled|checkpoint_",
        ("checkpoints.py", "context/rewind.py"),
    ),
    "background shells": (
        r"features\.background_shells|BackgroundShellsFeature|ShellRegistry|cmd_bashes|/bashes|bash_output|"
        r"kill_shell|background_",
        ("tools/background.py",),
    ),
    "subagents": (
        r"features\.subagents|features\.agent_definitions|SubagentsFeature|cmd_agents|/agents\b|subagent_|"
        r"SUBAGENT_PROMPT|[\"']subagent[\"']",
        (),
    ),
    "memory": (r"features\.memory\b|features\.memory_tools|MemoryFeature|open_memory|memory_save", ("memory/",)),
    "mcp client": (r"features\.mcp_client|McpClientFeature|mcp_client_feature|cmd_mcp|/mcp\b", ("mcp_bridge/",)),
    "hooks": (r"features\.hooks|HooksFeature", ("hook_settings.py",)),
    "skills": (r"features\.skills|SkillsFeature|SkillCommand|discover_skills", ("skills.py",)),
}


def code_of(path: Path) -> str:
    """The module's code without its docstrings and comments."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                body[0] = ast.Pass()
    return ast.unparse(tree)


def files_naming(pattern: str, src: Path) -> list[str]:
    found = []
    regex = re.compile(pattern)
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel.startswith("features/"):
            continue
        if regex.search(code_of(path)):
            found.append(rel)
    return found


def table(src: Path = SRC) -> str:
    lines = ["| capability | files outside features/ | of them its domain room | the others |", "|---|---|---|---|"]
    for name, (pattern, domain) in CAPABILITIES.items():
        files = files_naming(pattern, src)
        own = [f for f in files if any(f == d or f.startswith(d) for d in domain if d.endswith("/")) or f in domain]
        others = [f for f in files if f not in own]
        lines.append(f"| {name} | {len(files)} | {len(own)} | {len(others)}: {', '.join(others)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(table(Path(sys.argv[1]) if len(sys.argv) > 1 else SRC) + "\n")
