"""Skills as a feature: the skills found on disk (:mod:`memagent.skills`) offered to the model.

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

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from memagent.agent.feature import BaseFeature, SubagentContext
from memagent.commands_md import Invocation, substitute
from memagent.markers import Marker
from memagent.permissions.effects import Effect, declares
from memagent.skills import USER_SOURCES, Skill, SkillError, SkillIndex, discover_skills
from memagent.tools import claude_names
from memagent.tools.base import RegisteredTool, ToolContext, ToolError, ToolInput, tool

MAX_LISTED_FILES = 50
MAX_FILE_CHARS = 50_000
BINARY_PROBE_BYTES = 8192
SKILLS_HEADER = (
    f"{Marker.SKILLS.value}: playbooks for recurring tasks. When a task matches a skill's description, "
    "call the skill tool with its name before starting, and follow what it says.]"
)


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


def skill_tool(index: SkillIndex) -> RegisteredTool:
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
        allowed = self.skill.allowed_tools
        notes: tuple[str, ...] = ()
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
        if warn is not None:
            for problem in self.index.problems:
                warn(problem)

    def commands(self) -> list[SkillCommand]:
        """Every skill as a slash command."""
        return [SkillCommand(skill, self.trusted) for skill in self.index.skills]

    @property
    def warnings(self) -> list[str]:
        return list(self.index.problems)

    def tools(self) -> list[RegisteredTool]:
        return [skill_tool(self.index)] if self.index.skills else []

    def system_text(self) -> str | None:
        return self._text

    def for_subagent(self, child: SubagentContext) -> SkillsFeature:
        return self  # the same skills, loaded by the same tool


__all__ = [
    "SkillCommand",
    "SkillsFeature",
    "is_binary",
    "render_skill",
    "skill_tool",
    "skills_prompt",
]
