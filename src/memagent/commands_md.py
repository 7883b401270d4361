"""Slash commands that send a prompt: Markdown command files, as Claude Code reads them.

Every ``*.md`` file under these directories is a command, searched in this order (the first of
a name wins; built-in REPL commands always win over all of them):

- ``<project>/.memagent/commands/``
- ``<project>/.claude/commands/``
- ``$MEMAGENT_HOME/commands/``, ``~/.claude/commands/``

A file's name without ``.md`` is the command's name; a sub-folder is a namespace, joined with
``:`` (``.claude/commands/git/commit.md`` is ``/git:commit``). The optional YAML front matter
may set:

- ``description`` (shown in ``/help``; default: the first line of the body);
- ``argument-hint`` (shown after the name in ``/help`` and in completion);
- ``allowed-tools``: permission rules (a list, or one comma-separated string, e.g.
  ``Bash(git add:*), Bash(git commit:*)``) that run without asking *during that command's
  turn only*, as Claude Code does; the tools offered to the model do not change. From a project
  that is not trusted they are ignored (they would widen what the repository's file may do);
- ``model``: the model for that turn.

Running ``/name some args`` sends the body as the user's message with ``$ARGUMENTS`` replaced by
everything after the name, ``$1`` … ``$9`` by the single arguments (shell-style quoting; ``$1`` is
the first, as Claude Code's slash-command documentation and Anthropic's plugins use it) and
``$ARGUMENTS[0]``, ``$ARGUMENTS[1]`` … by the same arguments counted from 0. When the body uses
none of them, the arguments are appended as ``ARGUMENTS: …``. Each ``!`command``` in the body
is a shell command run *before* the prompt is sent, through the same permission check as a
``bash`` call (an allow rule or the command's ``allowed-tools`` runs it, otherwise it asks, or
is refused where nobody can answer); its output replaces it. A file whose front matter cannot
be parsed is named in a warning and skipped, and so is a file that is a symlink leading out of
the project (for the user's folders: out of ``$MEMAGENT_HOME`` and the home folder).

Skills (``/skill-name``) and MCP prompts (``/mcp__server__prompt``) are commands of the same
shape (:class:`PromptCommand`); they are made by their own features.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from memagent.fsutil import resolves_inside

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
_POSITIONAL = re.compile(r"\$([1-9])(?![0-9])")
_INDEXED = re.compile(r"\$ARGUMENTS\[(\d+)\]")
SHELL_SNIPPET = re.compile(r"!`([^`\n]+)`")
PROJECT_SOURCES = ("project (.memagent)", "project (.claude)")


@dataclass(frozen=True)
class Invocation:
    """What running a slash command asks for: the prompt sent as the user's message and, for
    that turn only, the permission rules that run without asking and the model."""

    command: str  # "/git:commit"
    prompt: str = ""  # with the ``!`cmd``` snippets still in it; see ``shell`` and ``filled``
    arguments: str = ""
    allowed_tools: tuple[str, ...] = ()
    model: str | None = None
    run_shell: bool = False  # whether the ``!`cmd``` snippets of ``prompt`` are to be run
    error: str | None = None  # the command cannot run (one line for the user)
    notes: tuple[str, ...] = ()  # one-line notices for the user (e.g. ignored allowed-tools)

    @property
    def shell(self) -> list[str]:
        """The shell commands to run first, in order."""
        return [m.group(1).strip() for m in SHELL_SNIPPET.finditer(self.prompt)] if self.run_shell else []

    def filled(self, outputs: Sequence[str]) -> str:
        """The prompt with each ``!`cmd``` replaced by its output (in order)."""
        if not self.run_shell:
            return self.prompt
        values = iter(outputs)
        return SHELL_SNIPPET.sub(lambda m: next(values, "").rstrip("\n"), self.prompt)


class PromptCommand(Protocol):
    """A slash command that becomes a prompt: a command file, a skill, an MCP prompt."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def argument_hint(self) -> str: ...

    @property
    def source(self) -> str: ...

    @property
    def usage(self) -> str: ...

    def invoke(self, arguments: str) -> Invocation: ...


def split_arguments(arguments: str) -> list[str]:
    try:
        return shlex.split(arguments)
    except ValueError:  # an unbalanced quote: fall back to plain words
        return arguments.split()


def substitute(template: str, arguments: str) -> str:
    """``$ARGUMENTS``, ``$ARGUMENTS[N]`` (from 0) and ``$1``…``$9`` (from 1) replaced; when the
    template uses none of them, non-empty arguments are appended as ``ARGUMENTS: …``."""
    arguments = arguments.strip()
    words = split_arguments(arguments)
    uses = "$ARGUMENTS" in template or _POSITIONAL.search(template) is not None
    text = _INDEXED.sub(lambda m: words[int(m.group(1))] if int(m.group(1)) < len(words) else "", template)
    text = text.replace("$ARGUMENTS", arguments)
    text = _POSITIONAL.sub(lambda m: words[int(m.group(1)) - 1] if int(m.group(1)) <= len(words) else "", text)
    if arguments and not uses:
        text = f"{text}\n\nARGUMENTS: {arguments}"
    return text


def tool_rules(value: object) -> tuple[str, ...]:
    """``allowed-tools`` as rule strings: a YAML list, or one string separated by commas (commas
    inside parentheses belong to the rule)."""
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(str(v).strip() for v in value if str(v).strip())
    rules, depth, current = [], 0, ""
    for ch in str(value):
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth <= 0:
            rules.append(current.strip())
            current = ""
        else:
            current += ch
    rules.append(current.strip())
    return tuple(r for r in rules if r)


@dataclass(frozen=True)
class CustomCommand:
    name: str
    description: str
    template: str
    path: Path
    source: str  # project (.memagent) | project (.claude) | user
    argument_hint: str = ""
    allowed_tools: tuple[str, ...] = ()
    model: str | None = None
    trusted: bool = True  # False: a project command in a project the user has not trusted

    @property
    def usage(self) -> str:
        return f"/{self.name}" + (f" {self.argument_hint}" if self.argument_hint else "")

    def expand(self, arguments: str) -> str:
        """The prompt this command sends for ``arguments`` (before its shell snippets run)."""
        return substitute(self.template, arguments)

    def invoke(self, arguments: str) -> Invocation:
        notes: tuple[str, ...] = ()
        allowed = self.allowed_tools
        if allowed and not self.trusted:
            notes = (f"/{self.name}: allowed-tools ignored, this project is not trusted (`memagent trust` allows it)",)
            allowed = ()
        return Invocation(
            f"/{self.name}", self.expand(arguments), arguments.strip(), allowed, self.model, run_shell=True, notes=notes
        )

    def as_dict(self) -> dict[str, str]:
        return {
            "name": self.name,
            "description": self.description,
            "path": str(self.path),
            "source": self.source,
            "argument_hint": self.argument_hint,
        }


@dataclass
class CommandSet:
    commands: list[PromptCommand] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def get(self, name: str) -> PromptCommand | None:
        wanted = name.lower()
        return next((c for c in self.commands if c.name.lower() == wanted), None)

    def names(self) -> list[str]:
        return [c.name for c in self.commands]

    def add(self, commands: Sequence[PromptCommand], reserved: frozenset[str] = frozenset()) -> None:
        """More commands (skills, MCP prompts); a name already taken keeps its first owner."""
        for command in commands:
            if command.name.lower() in reserved:
                self.problems.append(f"/{command.name} ({command.source}) is ignored: a built-in command has that name")
            elif self.get(command.name) is None:
                self.commands.append(command)

    def merged(self, commands: Sequence[PromptCommand], reserved: frozenset[str] = frozenset()) -> CommandSet:
        combined = CommandSet(list(self.commands), list(self.problems))
        combined.add(commands, reserved)
        return combined


def command_dirs(root: Path, home: Path, user_home: Path | None = None) -> list[tuple[Path, str]]:
    dirs = [
        (root / ".memagent" / "commands", "project (.memagent)"),
        (root / ".claude" / "commands", "project (.claude)"),
        (home / "commands", "user"),
    ]
    if user_home is not None:
        dirs.append((user_home / ".claude" / "commands", "user (~/.claude)"))
    return dirs


def _front_matter(path: Path) -> tuple[dict[str, object], str]:
    import frontmatter
    import yaml

    try:
        post = frontmatter.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot be read ({exc})") from None
    except (yaml.YAMLError, TypeError) as exc:
        raise ValueError(f"{path}: bad front matter ({' '.join(str(exc).split())[:160]})") from None
    if not isinstance(post.metadata, dict):
        raise ValueError(f"{path}: the front matter is not a mapping")
    return dict(post.metadata), post.content.strip()


def read_command(path: Path, source: str, name: str | None = None) -> CustomCommand:
    """Parse one command file; raises ValueError with a one-line reason."""
    meta, body = _front_matter(path)
    if not body:
        raise ValueError(f"{path}: the command has no text")
    first_line = next((line.strip("# ").strip() for line in body.splitlines() if line.strip()), "")
    description = " ".join(str(meta.get("description") or first_line).split())
    if len(description) > 80:
        description = description[:79] + "…"
    hint = " ".join(str(meta.get("argument-hint") or "").split())
    given_model = meta.get("model")
    model = given_model.strip() if isinstance(given_model, str) and given_model.strip() else None
    return CustomCommand(
        name or path.stem, description, body, path, source, hint, tool_rules(meta.get("allowed-tools")), model
    )


def command_name(path: Path, base: Path) -> str:
    """``git/commit.md`` under ``base`` → ``git:commit``."""
    return ":".join(path.relative_to(base).with_suffix("").parts)


def discover_commands(
    root: Path,
    home: Path,
    reserved: frozenset[str] = frozenset(),
    *,
    user_home: Path | None = None,
    trusted: bool = True,
) -> CommandSet:
    """Every usable command file; names in ``reserved`` (the built-in commands) are skipped.
    ``trusted``: whether the project's own commands may pre-approve tools (``allowed-tools``)."""
    found = CommandSet()
    for base, source in command_dirs(root, home, user_home):
        if not base.is_dir():
            continue
        allowed = (root,) if source.startswith("project") else (home, user_home or Path.home())
        for path in sorted(base.rglob("*.md")):
            name = command_name(path, base)
            if not path.is_file() or not NAME_PATTERN.match(name):
                continue
            if not resolves_inside(path, *allowed):  # a symlink out of the project (or your folders)
                where = "the project" if source.startswith("project") else "your own folders"
                found.problems.append(f"command skipped: {path} is a symlink leading outside {where}")
                continue
            if name.lower() in reserved:
                found.problems.append(f"command /{name} in {path} is ignored: a built-in command has that name")
                continue
            if found.get(name) is not None:
                continue  # the earlier directory wins
            try:
                command = read_command(path, source, name)
            except ValueError as exc:
                found.problems.append(f"command skipped: {exc}")
                continue
            found.commands.append(replace(command, trusted=trusted or source not in PROJECT_SOURCES))
    return found


__all__ = [
    "CommandSet",
    "CustomCommand",
    "Invocation",
    "PromptCommand",
    "SHELL_SNIPPET",
    "command_dirs",
    "command_name",
    "discover_commands",
    "read_command",
    "split_arguments",
    "substitute",
    "tool_rules",
]
