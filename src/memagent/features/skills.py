"""Skills: playbooks in ``SKILL.md`` files, loaded by the model on demand.

A skill is a directory holding ``SKILL.md`` (YAML front matter with ``name`` and
``description``, then a Markdown body) and any other files it needs (scripts, templates,
references). Skills are discovered, in this order, in:

- ``<project>/.agents/skills/<name>/SKILL.md``
- ``<project>/.claude/skills/<name>/SKILL.md``
- ``$MEMAGENT_HOME/skills/<name>/SKILL.md``
- ``~/.claude/skills/<name>/SKILL.md`` and ``~/.agents/skills/<name>/SKILL.md``

A skill's name is its directory's name, as Claude Code names it (the front matter's ``name`` is
only a title), made lowercase letters, digits and hyphens: ``Hook Development`` becomes
``hook-development`` (at most 64 characters). The first skill of a given name wins; a later one
of the same name is reported as shadowed. A file whose front matter cannot be parsed, or that
lacks a ``description``, is named in a warning and skipped, and so is a ``SKILL.md`` (or skill
folder) that is a symlink leading out of the project (for the user's skills: out of
``$MEMAGENT_HOME`` and the home folder).

Only names and descriptions go into the system prompt. The ``skill`` tool returns a skill's
body, the folder it lives in ("Base directory for this skill", so its scripts can be run by
path) and the list of its other files; ``skill`` with ``file`` returns one of those files (so a
skill outside the project works although ``read_file`` is confined to it). A binary file is
named with its size and path, never dumped; a very long one is cut with a note.

Every skill is also a slash command, ``/<name> [arguments]`` (:class:`SkillCommand`): it sends
the skill's body as the user's message, with ``$ARGUMENTS`` and its other placeholders filled as
for a Markdown command (:mod:`memagent.commands_md`), ``!`command``` snippets run through the
permission check, and the front matter's ``allowed-tools`` (only from a trusted project or the
user's own folders), ``argument-hint`` and ``model`` applied to that turn.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from memagent.agent.feature import BaseFeature, SubagentContext
from memagent.commands_md import Invocation, substitute, tool_rules
from memagent.fsutil import resolves_inside
from memagent.markers import Marker
from memagent.permissions.effects import Effect, declares
from memagent.tools import claude_names
from memagent.tools.base import Tool, ToolContext, ToolError, ToolInput, tool

SKILL_FILE = "SKILL.md"
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
MAX_LISTED_FILES = 50
MAX_FILE_CHARS = 50_000
BINARY_PROBE_BYTES = 8192
USER_SOURCES = ("user", "user (~/.claude)", "user (~/.agents)")
SKILLS_HEADER = (
    f"{Marker.SKILLS.value}: playbooks for recurring tasks. When a task matches a skill's description, "
    "call the skill tool with its name before starting, and follow what it says.]"
)


class SkillError(Exception):
    """A SKILL.md that cannot be used; ``str()`` names the file and the reason."""


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: Path  # the SKILL.md file
    source: str  # project (.agents) | project (.claude) | user | user (~/.claude) | user (~/.agents)
    title: str = ""  # the front matter's ``name`` when it is not the skill's name
    argument_hint: str = ""
    allowed_tools: tuple[str, ...] = ()
    model: str | None = None

    @property
    def directory(self) -> Path:
        return self.path.parent

    def body(self) -> str:
        return parse_skill_file(self.path, self.source)[1]

    def other_files(self, limit: int = 1000) -> list[str]:
        """The skill's other files (relative paths, hidden ones skipped), at most ``limit``."""
        found: list[str] = []
        for folder, dirs, files in os.walk(self.directory):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            base = Path(folder).relative_to(self.directory)
            found += [(base / name).as_posix() for name in sorted(files) if not name.startswith(".")]
            if len(found) >= limit:
                break
        return sorted(f for f in found if f != SKILL_FILE)[:limit]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "path": str(self.path), "source": self.source}


def normalize_name(text: str) -> str:
    """A skill name as Claude Code makes it: ``Hook Development`` → ``hook-development``."""
    return re.sub(r"[^a-z0-9]+", "-", text.strip().lower()).strip("-")[:64].rstrip("-")


@dataclass
class SkillIndex:
    skills: list[Skill] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)


def skill_dirs(root: Path, home: Path, user_home: Path | None = None) -> list[tuple[Path, str]]:
    dirs = [
        (root / ".agents" / "skills", "project (.agents)"),
        (root / ".claude" / "skills", "project (.claude)"),
        (home / "skills", "user"),
    ]
    if user_home is not None:
        dirs += [
            (user_home / ".claude" / "skills", "user (~/.claude)"),
            (user_home / ".agents" / "skills", "user (~/.agents)"),
        ]
    return dirs


def parse_skill_file(path: Path, source: str = "") -> tuple[dict[str, Any], str]:
    """(front matter, body) of a SKILL.md; raises :class:`SkillError` with a one-line reason."""
    import frontmatter
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillError(f"{path}: cannot be read ({exc})") from None
    try:
        post = frontmatter.loads(text)
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        reason = " ".join(str(exc).split())[:160]
        raise SkillError(f"{path}: bad front matter ({reason})") from None
    if not isinstance(post.metadata, dict):
        raise SkillError(f"{path}: the front matter is not a mapping")
    return dict(post.metadata), post.content.strip()


def read_skill(path: Path, source: str) -> Skill:
    meta, _ = parse_skill_file(path, source)
    name = normalize_name(path.parent.name)
    title = " ".join(str(meta.get("name") or "").split())
    description = " ".join(str(meta.get("description") or "").split())
    if not NAME_PATTERN.match(name):
        raise SkillError(f"{path}: the folder name {path.parent.name!r} gives no usable skill name")
    if not description:
        raise SkillError(f"{path}: the front matter has no description")
    model = meta.get("model")
    return Skill(
        name=name,
        description=description,
        path=path,
        source=source,
        title=title if normalize_name(title) != name else "",
        argument_hint=" ".join(str(meta.get("argument-hint") or "").split()),
        allowed_tools=tool_rules(meta.get("allowed-tools")),
        model=model.strip() if isinstance(model, str) and model.strip() else None,
    )


def discover_skills(root: Path, home: Path, user_home: Path | None = None) -> SkillIndex:
    """Every skill of the project and the user. A skill file (or folder) that is a symlink
    leading out of the project — or, for the user's skills, out of ``$MEMAGENT_HOME`` and the
    home folder — is skipped with a one-line problem."""
    index = SkillIndex()
    for base, source in skill_dirs(root, home, user_home):
        if not base.is_dir():
            continue
        allowed = (root,) if source.startswith("project") else (home, user_home or Path.home())
        for path in sorted(base.glob(f"*/{SKILL_FILE}")):
            if not resolves_inside(path, *allowed):
                index.problems.append(f"skill skipped: {path} is a symlink leading outside {_where(source)}")
                continue
            try:
                skill = read_skill(path, source)
            except SkillError as exc:
                index.problems.append(f"skill skipped: {exc}")
                continue
            earlier = index.get(skill.name)
            if earlier is not None:
                index.problems.append(f"skill {skill.name!r} in {path} is shadowed by {earlier.path}")
                continue
            index.skills.append(skill)
    return index


def _where(source: str) -> str:
    return "the project" if source.startswith("project") else "your own folders"


def skills_prompt(skills: list[Skill]) -> str | None:
    if not skills:
        return None
    lines = [f"- {s.name}: {s.description}" for s in skills]
    return SKILLS_HEADER + "\n" + "\n".join(lines)


class SkillInput(ToolInput):
    name: str = Field(description="The skill's name, as listed in the system prompt.")
    file: str | None = Field(
        default=None, description="Optional: one of the skill's other files (a path relative to the skill directory)."
    )


def _skill_file(skill: Skill, relative: str) -> str:
    base = skill.directory.resolve()
    target = (base / relative).resolve()  # also refuses a symlink inside the skill leading out
    if base not in target.parents:
        raise ToolError(f"{relative!r} is not inside the skill {skill.name!r}")
    if not target.is_file():
        raise ToolError(
            f"the skill {skill.name!r} has no file {relative!r}; it has: {', '.join(skill.other_files()) or 'none'}"
        )
    size = target.stat().st_size
    with target.open("rb") as handle:
        probe = handle.read(BINARY_PROBE_BYTES)
    if is_binary(probe):
        return (
            f"[{relative} is a binary file ({size:,} bytes), not shown. Its path: {target} — use it from a "
            "command (a script of the skill can read it), do not read it as text]"
        )
    text = target.read_text(encoding="utf-8", errors="replace")
    if len(text) > MAX_FILE_CHARS:
        text = (
            text[:MAX_FILE_CHARS] + f"\n[… {relative} has {len(text):,} characters; only the first "
            f"{MAX_FILE_CHARS:,} are shown. Its path: {target}]"
        )
    return text


def is_binary(probe: bytes) -> bool:
    """Bytes that are not text: a NUL, or not UTF-8 (allowing a character cut at the end)."""
    if b"\x00" in probe:
        return True
    try:
        probe.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(probe) - 4
    return False


def render_skill(skill: Skill) -> str:
    try:
        body = skill.body()
    except SkillError as exc:
        raise ToolError(str(exc)) from None
    files = skill.other_files()
    parts = [f"# Skill: {skill.name}\n\nBase directory for this skill: {skill.directory.resolve()}\n\n{body}"]
    if files:
        shown = files[:MAX_LISTED_FILES]
        more = f"\n(and {len(files) - len(shown)} more)" if len(files) > len(shown) else ""
        parts.append(
            "Other files of this skill (read one with the skill tool and `file`):\n"
            + "\n".join(f"- {f}" for f in shown)
            + more
        )
    return "\n\n".join(parts)


def skill_tool(index: SkillIndex) -> Tool:
    @tool("skill", SkillInput, key_argument="name", effects=declares(Effect.READ), claude=claude_names.SKILL)
    def run_skill(args: SkillInput, ctx: ToolContext) -> str:
        """Load a skill (a playbook listed under "Skills" in the system prompt): returns its
        instructions and the list of its other files. Pass `file` to read one of those files."""
        found = index.get(args.name.strip())
        if found is None:
            known = ", ".join(s.name for s in index.skills) or "none"
            raise ToolError(f"no skill named {args.name!r}; available: {known}")
        if args.file:
            return _skill_file(found, args.file)
        return render_skill(found)

    return run_skill


@dataclass(frozen=True)
class SkillCommand:
    """A skill as the slash command ``/<name> [arguments]``."""

    skill: Skill
    trusted: bool = True  # False: a project skill in a project the user has not trusted

    @property
    def name(self) -> str:
        return self.skill.name

    @property
    def description(self) -> str:
        text = self.skill.description
        return text if len(text) <= 80 else text[:79] + "…"

    @property
    def argument_hint(self) -> str:
        return self.skill.argument_hint

    @property
    def source(self) -> str:
        return f"skill, {self.skill.source}"

    @property
    def usage(self) -> str:
        return f"/{self.name}" + (f" {self.argument_hint}" if self.argument_hint else "")

    def invoke(self, arguments: str) -> Invocation:
        command = f"/{self.name}"
        try:
            body = self.skill.body()
        except SkillError as exc:
            return Invocation(command, error=str(exc))
        prompt = f"Base directory for this skill: {self.skill.directory.resolve()}\n\n{substitute(body, arguments)}"
        allowed, notes = self.skill.allowed_tools, ()
        if allowed and not (self.trusted or self.skill.source in USER_SOURCES):
            allowed = ()
            notes = (f"{command}: allowed-tools ignored, this project is not trusted (`memagent trust` allows it)",)
        return Invocation(command, prompt, arguments.strip(), allowed, self.skill.model, run_shell=True, notes=notes)


class SkillsFeature(BaseFeature):
    """Skill names and descriptions in the system prompt; the ``skill`` tool loads one."""

    name = "skills"

    def __init__(
        self,
        root: Path,
        home: Path,
        *,
        user_home: Path | None = None,
        trusted: bool = True,
        warn: Callable[[str], None] | None = None,
    ):
        self.index = discover_skills(root, home, user_home)
        self.trusted = trusted
        self._text = skills_prompt(self.index.skills)
        for problem in self.index.problems if warn is not None else ():
            warn(problem)

    def commands(self) -> list[SkillCommand]:
        """Every skill as a slash command."""
        return [SkillCommand(skill, self.trusted) for skill in self.index.skills]

    @property
    def warnings(self) -> list[str]:
        return list(self.index.problems)

    def tools(self) -> list[Tool]:
        return [skill_tool(self.index)] if self.index.skills else []

    def system_text(self) -> str | None:
        return self._text

    def for_subagent(self, child: SubagentContext) -> SkillsFeature:
        return self  # the same skills, loaded by the same tool


# ------------------------------------------------------------------ writing new skills

NEW_SKILL_BODY = """\
# {title}

When to use: {description}

Steps:
1. …
"""


def slugify(text: str, limit: int = 40) -> str:
    """A skill name from free text: lowercase words joined by hyphens."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > limit:
            break
        slug = candidate
    return slug or "skill"


def skill_markdown(name: str, description: str, body: str, extra: dict[str, Any] | None = None) -> str:
    """A SKILL.md text: YAML front matter (name, description, extra keys), then the body."""
    import yaml

    meta = {"name": name, "description": description, **(extra or {})}
    head = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000).strip()
    return f"---\n{head}\n---\n\n{body.strip()}\n"


def write_new_skill(root: Path, name: str, text: str, folder: str = ".agents") -> Path:
    """Create ``<folder>/skills/<name>/SKILL.md`` (``.agents``, or ``.claude`` where Claude Code
    finds it too); refuses a bad name or an existing skill."""
    from memagent.fsutil import atomic_write

    if not NAME_PATTERN.match(name):
        raise SkillError(f"skill name {name!r} must be lowercase letters, digits and hyphens (at most 64)")
    path = root / folder / "skills" / name / SKILL_FILE
    if path.exists():
        raise SkillError(f"{path} already exists")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text)
    return path


def first_sentence(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    match = re.match(r"(.+?[.!?])(\s|$)", flat)
    sentence = match.group(1) if match else flat
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"


__all__ = [
    "Skill",
    "SkillCommand",
    "is_binary",
    "normalize_name",
    "SkillError",
    "SkillIndex",
    "SkillsFeature",
    "discover_skills",
    "parse_skill_file",
    "read_skill",
    "skill_tool",
    "skills_prompt",
    "skill_markdown",
    "slugify",
    "write_new_skill",
]
