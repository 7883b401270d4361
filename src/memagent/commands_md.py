"""Custom slash commands: Markdown prompt templates, as Claude Code reads them.

Every ``*.md`` file under these directories becomes ``/<file name without .md>``, searched in
this order (the first of a name wins; built-in REPL commands always win over all of them):

- ``<project>/.memagent/commands/``
- ``<project>/.claude/commands/``
- ``$MEMAGENT_HOME/commands/``

Files in sub-directories count too (``.claude/commands/git/commit.md`` is ``/commit``). The
optional YAML front matter may set ``description`` (shown in ``/help``; default: the first line
of the body) and ``argument-hint`` (shown after the name). Running ``/name some args`` sends
the body as a user message with ``$ARGUMENTS`` replaced by everything after the name and
``$1`` … ``$9`` by the individual arguments (shell-style quoting); when the body mentions
neither, the arguments are appended on a line of their own. A file whose front matter cannot
be parsed is named in a warning and skipped, and so is a file that is a symlink leading out of
the project (for ``$MEMAGENT_HOME/commands/``: out of ``$MEMAGENT_HOME`` and the home folder).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memagent.fsutil import resolves_inside

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
_POSITIONAL = re.compile(r"\$([1-9])")


@dataclass(frozen=True)
class CustomCommand:
    name: str
    description: str
    template: str
    path: Path
    source: str  # project (.memagent) | project (.claude) | user
    argument_hint: str = ""

    @property
    def usage(self) -> str:
        return f"/{self.name}" + (f" {self.argument_hint}" if self.argument_hint else "")

    def expand(self, arguments: str) -> str:
        """The prompt this command sends for ``arguments`` (the text after its name)."""
        arguments = arguments.strip()
        uses_arguments = "$ARGUMENTS" in self.template or _POSITIONAL.search(self.template)
        text = self.template.replace("$ARGUMENTS", arguments)
        if _POSITIONAL.search(text):
            words = _split(arguments)
            text = _POSITIONAL.sub(lambda m: words[int(m.group(1)) - 1] if int(m.group(1)) <= len(words) else "", text)
        if arguments and not uses_arguments:
            text = f"{text}\n\nArguments: {arguments}"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "path": str(self.path), "source": self.source}


def _split(arguments: str) -> list[str]:
    try:
        return shlex.split(arguments)
    except ValueError:  # an unbalanced quote: fall back to plain words
        return arguments.split()


@dataclass
class CommandSet:
    commands: list[CustomCommand] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def get(self, name: str) -> CustomCommand | None:
        wanted = name.lower()
        return next((c for c in self.commands if c.name.lower() == wanted), None)

    def names(self) -> list[str]:
        return [c.name for c in self.commands]


def command_dirs(root: Path, home: Path) -> list[tuple[Path, str]]:
    return [
        (root / ".memagent" / "commands", "project (.memagent)"),
        (root / ".claude" / "commands", "project (.claude)"),
        (home / "commands", "user"),
    ]


def read_command(path: Path, source: str) -> CustomCommand:
    """Parse one command file; raises ValueError with a one-line reason."""
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
    body = post.content.strip()
    if not body:
        raise ValueError(f"{path}: the command has no text")
    first_line = next((line.strip("# ").strip() for line in body.splitlines() if line.strip()), "")
    description = " ".join(str(post.metadata.get("description") or first_line).split())
    if len(description) > 80:
        description = description[:79] + "…"
    hint = " ".join(str(post.metadata.get("argument-hint") or "").split())
    return CustomCommand(path.stem, description, body, path, source, hint)


def discover_commands(root: Path, home: Path, reserved: frozenset[str] = frozenset()) -> CommandSet:
    """Every usable command file; names in ``reserved`` (the built-in commands) are skipped."""
    found = CommandSet()
    for base, source in command_dirs(root, home):
        if not base.is_dir():
            continue
        allowed = (root,) if source.startswith("project") else (home, Path.home())
        for path in sorted(base.rglob("*.md")):
            if not path.is_file() or not NAME_PATTERN.match(path.stem):
                continue
            if not resolves_inside(path, *allowed):  # a symlink out of the project (or your folders)
                where = "the project" if source.startswith("project") else "your own folders"
                found.problems.append(f"command skipped: {path} is a symlink leading outside {where}")
                continue
            if path.stem.lower() in reserved:
                found.problems.append(f"command /{path.stem} in {path} is ignored: a built-in command has that name")
                continue
            if found.get(path.stem) is not None:
                continue  # the earlier directory wins
            try:
                found.commands.append(read_command(path, source))
            except ValueError as exc:
                found.problems.append(f"command skipped: {exc}")
    return found


__all__ = ["CommandSet", "CustomCommand", "command_dirs", "discover_commands", "read_command"]
