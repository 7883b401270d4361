"""Subagent definitions, in Claude Code's format: one Markdown file per agent.

Searched in this order (the first definition of a name wins):

- ``<project>/.memagent/agents/*.md`` and ``<project>/.claude/agents/*.md``
- ``$MEMAGENT_HOME/agents/*.md`` and ``~/.claude/agents/*.md``

The YAML front matter holds ``name`` (default: the file name), ``description`` (when to use the
agent: the model reads it to choose), ``tools`` (a comma-separated list or a YAML list of Claude
Code tool names — ``Read``, ``Write``, ``Edit``, ``Bash``, ``Glob``, ``Grep``, ``TodoWrite``,
``Task``, … — or memagent's own, and ``mcp__server`` / ``mcp__server__tool``) and ``model``
(``sonnet``, ``opus``, ``haiku``, ``inherit`` or a model id). The body is the agent's system
prompt. Two agents are built in: ``general-purpose`` (every tool its parent has) and ``Explore``
(read-only: find and read code, answer questions about it); their names are reserved.

Without ``tools`` an agent gets the read-only tools only. A definition can only narrow: whatever
it lists, a subagent never has a tool its parent lacks, never calls ``task`` unless it lists it,
and every call goes through the parent's permission gate. A definition file is untrusted input
(it may come with a cloned repository): a file that is a symlink leading out of its folder's
owner (the project; your home folders) or larger than :data:`MAX_FILE_BYTES` is skipped with a
notice, and so is one whose front matter cannot be read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from memagent.fsutil import resolves_inside

MAX_FILE_BYTES = 256 * 1024
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
GENERAL_PURPOSE = "general-purpose"
EXPLORE = "Explore"

# Claude Code's tool names, as memagent's.
CLAUDE_TOOLS: dict[str, tuple[str, ...]] = {
    "Read": ("read_file",),
    "Write": ("write_file",),
    "Edit": ("edit_file",),
    "MultiEdit": ("edit_file",),
    "Bash": ("bash",),
    "Glob": ("glob",),
    "Grep": ("grep",),
    "LS": ("glob",),
    "TodoWrite": ("todo",),
    "Task": ("task",),
    "Agent": ("task",),
    "BashOutput": ("bash_output",),
    "KillShell": ("kill_shell",),
    "KillBash": ("kill_shell",),
    "NotebookRead": ("read_file",),
    "Skill": ("skill",),
    "ListMcpResourcesTool": ("list_mcp_resources",),
    "ReadMcpResourceTool": ("read_mcp_resource",),
}
# Names Claude Code knows that memagent has no tool for: left out with a notice.
UNSUPPORTED = frozenset({"WebFetch", "WebSearch", "NotebookEdit", "ExitPlanMode", "SlashCommand"})
ALL_TOOLS = "*"


@dataclass(frozen=True)
class AgentDefinition:
    """One kind of subagent. ``tools``: memagent tool names (or ``mcp__…`` prefixes), ``("*",)`` for
    every tool of the parent, None for the read-only default."""

    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] | None = None
    model: str | None = None  # None or "inherit": the parent's model
    source: str = "built-in"
    path: Path | None = None
    ignored_tools: tuple[str, ...] = ()

    @property
    def allows_task(self) -> bool:
        return self.tools is not None and ("task" in self.tools or ALL_TOOLS in self.tools)

    def describe_tools(self) -> str:
        if self.tools is None:
            return "read-only tools"
        if ALL_TOOLS in self.tools:
            return "every tool of its parent"
        return ", ".join(self.tools) or "no tools"

    def as_dict(self) -> dict[str, str | None]:
        return {
            "name": self.name,
            "description": self.description,
            "tools": self.describe_tools(),
            "model": self.model or "inherit",
            "source": self.source,
            "path": str(self.path) if self.path else None,
        }


GENERAL_PROMPT = """\
You are a general-purpose subagent. Research the question or carry out the task you are given,
using your tools as needed: search and read the code, run commands, and make changes when the
task asks for them. Work autonomously; nobody answers questions in between."""

EXPLORE_PROMPT = """\
You are an exploration subagent: you find and read code to answer a question about the project.
Search with grep and glob, read the relevant files, and follow the code until you can answer.
You cannot change anything. Be thorough but quick: report file paths (with line numbers where
they help) and what you found, not the steps you took."""

BUILT_IN = (
    AgentDefinition(
        GENERAL_PURPOSE,
        "General-purpose agent for researching complex questions, searching for code and "
        "carrying out multi-step tasks on its own, with every tool you have.",
        GENERAL_PROMPT,
        tools=(ALL_TOOLS,),
    ),
    AgentDefinition(
        EXPLORE,
        "Fast read-only agent for exploring the codebase: find files by pattern, search code "
        "for keywords, and answer questions about how the code works.",
        EXPLORE_PROMPT,
    ),
)


@dataclass
class AgentSet:
    definitions: list[AgentDefinition] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def get(self, name: str) -> AgentDefinition | None:
        exact = next((d for d in self.definitions if d.name == name), None)
        if exact is not None:
            return exact
        wanted = name.strip().lower()
        return next((d for d in self.definitions if d.name.lower() == wanted), None)

    def names(self) -> list[str]:
        return [d.name for d in self.definitions]


def agent_dirs(root: Path, home: Path, user_home: Path | None = None) -> list[tuple[Path, str, tuple[Path, ...]]]:
    """(folder, source label, where its files may lead) in search order."""
    user_home = user_home if user_home is not None else Path.home()
    return [
        (root / ".memagent" / "agents", "project (.memagent)", (root,)),
        (root / ".claude" / "agents", "project (.claude)", (root,)),
        (home / "agents", "user ($MEMAGENT_HOME)", (home, user_home)),
        (user_home / ".claude" / "agents", "user (~/.claude)", (user_home,)),
    ]


def parse_tools(raw: object) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """The ``tools`` field as memagent tool names, and the names it could not use."""
    if raw is None:
        return None, ()
    items = [str(x) for x in raw] if isinstance(raw, list) else str(raw).split(",")
    names: list[str] = []
    ignored: list[str] = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        if item == ALL_TOOLS:
            names.append(ALL_TOOLS)
        elif item in CLAUDE_TOOLS:
            names.extend(CLAUDE_TOOLS[item])
        elif item.startswith("mcp__") or re.fullmatch(r"[a-z][a-z0-9_]*", item):
            names.append(item)  # memagent's own names, and MCP tools or servers
        else:
            ignored.append(item)
    if not names and not ignored:
        return None, ()
    return tuple(dict.fromkeys(names)), tuple(ignored)


def read_definition(path: Path, source: str) -> AgentDefinition:
    """Parse one definition file; ValueError with a one-line reason."""
    import frontmatter
    import yaml

    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"{path}: larger than {MAX_FILE_BYTES // 1024} KB")
        post = frontmatter.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot be read ({exc})") from None
    except (yaml.YAMLError, TypeError) as exc:
        raise ValueError(f"{path}: bad front matter ({' '.join(str(exc).split())[:160]})") from None
    meta = post.metadata
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: the front matter is not a mapping")
    name = str(meta.get("name") or path.stem).strip()
    if not NAME_PATTERN.match(name):
        raise ValueError(f"{path}: {name!r} is not a usable agent name (letters, digits, - _ . :)")
    prompt = post.content.strip()
    if not prompt:
        raise ValueError(f"{path}: the agent has no system prompt (the text after the front matter)")
    description = " ".join(str(meta.get("description") or prompt.splitlines()[0]).split())[:1000]
    tools, ignored = parse_tools(meta.get("tools"))
    model = str(meta.get("model") or "").strip() or None
    return AgentDefinition(
        name, description, prompt, tools, None if model == "inherit" else model, source, path, ignored
    )


def discover_agents(root: Path, home: Path, user_home: Path | None = None) -> AgentSet:
    """The built-in agents, then every usable definition file (see the module docstring)."""
    found = AgentSet(list(BUILT_IN))
    reserved = {d.name.lower() for d in BUILT_IN}
    for base, source, allowed in agent_dirs(root, home, user_home):
        if not base.is_dir():
            continue
        for path in sorted(base.glob("*.md")):
            if not path.is_file():
                continue
            if not resolves_inside(path, *allowed):
                found.problems.append(f"agent skipped: {path} is a symlink leading outside {source.split()[0]} folders")
                continue
            try:
                definition = read_definition(path, source)
            except ValueError as exc:
                found.problems.append(f"agent skipped: {exc}")
                continue
            if definition.name.lower() in reserved:
                found.problems.append(f"agent {definition.name} in {path} is ignored: a built-in agent has that name")
                continue
            if found.get(definition.name) is not None:
                continue  # an earlier folder wins
            if definition.ignored_tools:
                found.problems.append(
                    f"agent {definition.name}: tools memagent does not have are left out: "
                    f"{', '.join(definition.ignored_tools)}"
                )
            found.definitions.append(definition)
    return found


__all__ = [
    "ALL_TOOLS",
    "AgentDefinition",
    "AgentSet",
    "BUILT_IN",
    "CLAUDE_TOOLS",
    "EXPLORE",
    "GENERAL_PURPOSE",
    "discover_agents",
    "parse_tools",
    "read_definition",
]
