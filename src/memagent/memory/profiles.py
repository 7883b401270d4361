"""User and project profiles: a small, stable summary aggregated from active cards.

No model call: the aggregation is deterministic. Cards are sorted into sections by their type
and a few keyword rules, ranked by importance × confidence (newest first on ties), and taken
round-robin across sections until the token budget (characters / 4) is spent, so every section
gets its best card before any section gets a second one.

User profile (user-scope cards): communication style, languages, tools, expertise, preferences.
Project profile (project-scope cards): goal, stack, constraints, key decisions (with their date),
conventions and procedures, current phase, other facts.

Each profile is cached on disk in ``$MEMAGENT_HOME`` (``memory/profile.json`` for the user,
``cache/profiles/<project>.json`` for a project: never in the project, where a repository could
ship a cache of its own) with a fingerprint of the contributing cards (id, status, updated_at);
it is rebuilt when the fingerprint changes. The cache is never created for a store that does not
exist yet, and :func:`invalidate_profiles` (called on forget) deletes it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memagent.fsutil import atomic_write, make_dirs
from memagent.jsontypes import JsonObject
from memagent.memory.cards import MemoryCard, iso_utc

if TYPE_CHECKING:
    from memagent.config import ProjectPaths
    from memagent.memory.service import MemoryService


PROFILE_TOKENS = 400  # per profile
PROFILE_FILE = "profile.json"
PROJECT_CACHE_DIR = "profiles"
PROFILE_VERSION = 1
MIN_CONFIDENCE = 0.5  # decayed or doubtful cards stay out of the profile
MIN_IMPORTANCE = 0.3  # minor details are retrieved per turn when relevant, not profiled
MAX_CARDS = 500  # newest active cards considered

USER_SECTIONS = ("Communication style", "Languages", "Tools", "Expertise", "Preferences")
PROJECT_SECTIONS = (
    "Goal",
    "Stack",
    "Constraints",
    "Key decisions",
    "Conventions and procedures",
    "Current phase",
    "Other facts",
)

_STYLE = re.compile(
    r"\b(concise|brief|terse|short|verbose|detailed|explain|explanations?|tone|answers?|repl(y|ies)|respond|"
    r"responses?|emoji|bullet|summar(y|ies)|in (english|french|german|spanish|italian|portuguese|japanese|chinese))\b",
    re.I,
)
_LANGUAGES = re.compile(
    r"\b(python|rust|go|golang|typescript|javascript|java|kotlin|c\+\+|c#|ruby|php|swift|scala|haskell|elixir|"
    r"ocaml|clojure|lua|perl|julia|zig|sql|bash|shell)\b",
    re.I,
)
_TOOLS = re.compile(
    r"\b(vim|neovim|nvim|emacs|vs ?code|pycharm|intellij|git|docker|podman|uv|poetry|pip|pipx|conda|pytest|make|"
    r"tmux|zsh|fish|kubectl|terraform|ruff|black|mypy|pyright|npm|pnpm|yarn|cargo|gradle|maven|just|pre-commit|"
    r"jj|github|gitlab)\b",
    re.I,
)
_EXPERTISE = re.compile(
    r"\b(expert|experienced|senior|junior|years of|new to|beginner|familiar|fluent|background in)\b", re.I
)
_GOAL = re.compile(r"\b(goal|aim|purpose|mission|we are building|is building|the project is|the product is)\b", re.I)
_PHASE = re.compile(
    r"\b(phase|milestone|sprint|currently|working on|in progress|next step|roadmap|beta|alpha|release candidate)\b",
    re.I,
)
_STACK = re.compile(
    r"\b(stack|built with|written in|runs on|uses|version|framework|database|django|fastapi|flask|postgres(ql)?|"
    r"mysql|sqlite|redis|react|vue|svelte|node(\.js)?|kafka|rabbitmq|kubernetes|k8s|aws|gcp|azure|chroma|pydantic|"
    r"typer|celery|graphql|grpc)\b",
    re.I,
)


def user_section(card: MemoryCard) -> str:
    text = card.content
    if card.memory_type == "skill" or _EXPERTISE.search(text):
        return "Expertise"
    if _STYLE.search(text):
        return "Communication style"
    if _TOOLS.search(text):
        return "Tools"
    if _LANGUAGES.search(text):
        return "Languages"
    return "Preferences"


def project_section(card: MemoryCard) -> str:
    text, kind = card.content, card.memory_type
    if kind == "constraint":
        return "Constraints"
    if kind == "decision":
        return "Key decisions"
    if kind in ("preference", "habit", "procedure"):
        return "Conventions and procedures"
    if kind == "event" or (kind == "context" and _PHASE.search(text)):
        return "Current phase"
    if _GOAL.search(text):
        return "Goal"
    if kind == "fact" and (_STACK.search(text) or _LANGUAGES.search(text)):
        return "Stack"
    if kind == "context":
        return "Current phase"
    return "Other facts"


def _line(card: MemoryCard, section: str) -> str:
    text = " ".join(card.content.split())
    if section in ("Key decisions", "Current phase"):
        text = f"{text} ({card.created_at.date().isoformat()})"
    return f"- {card.citation()} {text}"


def _weight(card: MemoryCard) -> tuple[float, str]:
    return (-(card.importance * card.confidence), "" if card.created_at is None else _neg_time(card))


def _neg_time(card: MemoryCard) -> str:
    # Newest first on ties: invert the sortable timestamp's characters.
    return "".join(chr(0x7F - ord(c)) for c in iso_utc(card.created_at))


def build_profile(
    title: str, cards: Sequence[MemoryCard], sections: Sequence[str], classify, max_tokens: int = PROFILE_TOKENS
) -> str | None:
    """One profile text within ``max_tokens`` (chars/4), or ``None`` when no card qualifies."""
    grouped: dict[str, list[MemoryCard]] = {name: [] for name in sections}
    for card in cards:
        if card.active and card.confidence >= MIN_CONFIDENCE:
            grouped[classify(card)].append(card)
    for items in grouped.values():
        items.sort(key=_weight)
    if not any(grouped.values()):
        return None
    budget = max_tokens * 4
    used = len(title) + 1
    chosen: dict[str, list[str]] = {name: [] for name in sections}
    depth = 0
    while any(depth < len(items) for items in grouped.values()):
        for name in sections:
            items = grouped[name]
            if depth >= len(items):
                continue
            line = _line(items[depth], name)
            cost = len(line) + 1 + (0 if chosen[name] else len(name) + 2)
            if used + cost <= budget:
                chosen[name].append(line)
                used += cost
        depth += 1
    out = [title]
    for name in sections:
        if chosen[name]:
            out.append(f"{name}:")
            out.extend(chosen[name])
    return "\n".join(out) if len(out) > 1 else None


@dataclass
class Profiles:
    user: str | None
    project: str | None
    user_cards: int = 0
    project_cards: int = 0

    def render(self) -> str | None:
        parts = [p for p in (self.user, self.project) if p]
        return "\n\n".join(parts) if parts else None

    def as_dict(self) -> JsonObject:
        return {
            "user": self.user,
            "project": self.project,
            "user_cards": self.user_cards,
            "project_cards": self.project_cards,
        }


def fingerprint(cards: Sequence[MemoryCard], max_tokens: int) -> str:
    digest = hashlib.sha256(f"v{PROFILE_VERSION}:{max_tokens}".encode())
    for card in sorted(cards, key=lambda c: c.id):
        digest.update(f"|{card.id}:{card.status}:{iso_utc(card.updated_at)}:{card.confidence:.3f}".encode())
    return digest.hexdigest()[:24]


def _read_cache(path: Path | None, key: str) -> tuple[bool, str | None]:
    if path is None:
        return False, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False, None
    if not isinstance(data, dict) or data.get("fingerprint") != key:
        return False, None
    text = data.get("text")
    return True, text if isinstance(text, str) else None


def _write_cache(path: Path | None, key: str, text: str | None) -> None:
    if path is None:
        return
    if path.parent.name == PROJECT_CACHE_DIR:
        with suppress(OSError):
            make_dirs(path.parent)
    if not path.parent.is_dir():
        return  # never create a store directory just for a cache
    payload = json.dumps({"fingerprint": key, "text": text}, ensure_ascii=False)
    with suppress(OSError):  # a cache that cannot be written is rebuilt next time
        atomic_write(path, payload, durable=False)


def _cached(path: Path | None, cards: Sequence[MemoryCard], max_tokens: int, build) -> str | None:
    """The cached text when its fingerprint matches; built (and cached once there are cards, or a
    cache to replace) otherwise."""
    key = fingerprint(cards, max_tokens)
    hit, text = _read_cache(path, key)
    if hit:
        return text
    text = build()
    if cards or (path is not None and path.exists()):
        _write_cache(path, key, text)
    return text


def cache_files(paths: ProjectPaths) -> tuple[Path, Path]:
    """(user cache, project cache)."""
    project = hashlib.sha256(str(Path(paths.root).resolve()).encode("utf-8")).hexdigest()[:16]
    return (Path(paths.user_memory) / PROFILE_FILE, Path(paths.home) / "cache" / PROJECT_CACHE_DIR / f"{project}.json")


def active_cards(service: MemoryService, scope: str) -> list[MemoryCard]:
    return [c for c in service.list(scope=scope, limit=MAX_CARDS) if c.active and c.scope == scope and _profiled(c)]


def _profiled(card: MemoryCard) -> bool:
    """Profiles hold what is stable: one-off events only when they mark a phase; never what
    tool output taught (a file or a command's output is not the user's word), nor a card file
    this machine did not write (team knowledge from the repository: see ``memory.provenance``)."""
    if card.importance < MIN_IMPORTANCE or card.source in ("tool", "repository"):
        return False
    return card.memory_type != "event" or bool(_PHASE.search(card.content))


def load_profiles(
    service: MemoryService, paths: ProjectPaths | None = None, max_tokens: int = PROFILE_TOKENS
) -> Profiles:
    """Both profiles, from the cache when their cards have not changed."""
    user_cache, project_cache = cache_files(paths) if paths is not None else (None, None)
    users = active_cards(service, "user")
    projects = active_cards(service, "project")
    user = _cached(
        user_cache,
        users,
        max_tokens,
        lambda: build_profile("User profile (from long-term memory):", users, USER_SECTIONS, user_section, max_tokens),
    )
    project = _cached(
        project_cache,
        projects,
        max_tokens,
        lambda: build_profile(
            "Project profile (from long-term memory):", projects, PROJECT_SECTIONS, project_section, max_tokens
        ),
    )
    return Profiles(user=user, project=project, user_cards=len(users), project_cards=len(projects))


def render_profile(
    service: MemoryService, paths: ProjectPaths | None = None, max_tokens: int = PROFILE_TOKENS
) -> str | None:
    """The text injected at session start (and after compaction), or ``None`` with no cards."""
    return load_profiles(service, paths, max_tokens).render()


def invalidate_profiles(paths: ProjectPaths) -> None:
    """Delete the cached profiles (forget calls this: a cache may quote a forgotten card)."""
    for path in cache_files(paths):
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError:
            continue


__all__ = [
    "PROJECT_SECTIONS",
    "PROFILE_TOKENS",
    "Profiles",
    "USER_SECTIONS",
    "build_profile",
    "fingerprint",
    "invalidate_profiles",
    "load_profiles",
    "project_section",
    "render_profile",
    "user_section",
]
