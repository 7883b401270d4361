"""Skills on disk: playbooks in ``SKILL.md`` files, found and written (the :mod:`~memagent.features.skills`
feature puts them in front of the model; ``memagent skills`` and ``memagent memory reflect`` list
and write them).

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
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from memagent.commands_md import tool_rules
from memagent.fsutil import atomic_write, resolves_inside

SKILL_FILE = "SKILL.md"
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
USER_SOURCES = ("user", "user (~/.claude)", "user (~/.agents)")


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

    def as_dict(self) -> dict[str, str]:
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


def parse_skill_file(path: Path, source: str = "") -> tuple[dict[str, object], str]:
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


def skill_markdown(name: str, description: str, body: str, extra: dict[str, str] | None = None) -> str:
    """A SKILL.md text: YAML front matter (name, description, extra keys), then the body."""
    import yaml

    meta = {"name": name, "description": description, **(extra or {})}
    head = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000).strip()
    return f"---\n{head}\n---\n\n{body.strip()}\n"


def write_new_skill(root: Path, name: str, text: str, folder: str = ".agents") -> Path:
    """Create ``<folder>/skills/<name>/SKILL.md`` (``.agents``, or ``.claude`` where Claude Code
    finds it too); refuses a bad name or an existing skill."""
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
    "NAME_PATTERN",
    "NEW_SKILL_BODY",
    "SKILL_FILE",
    "USER_SOURCES",
    "Skill",
    "SkillError",
    "SkillIndex",
    "discover_skills",
    "first_sentence",
    "normalize_name",
    "parse_skill_file",
    "read_skill",
    "skill_dirs",
    "skill_markdown",
    "slugify",
    "write_new_skill",
]
