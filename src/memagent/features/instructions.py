"""Project instructions: ``AGENTS.md`` / ``CLAUDE.md`` files, as Claude Code and Codex read them.

Which files, in this order (general first, most specific last):

1. the user-level file ``$MEMAGENT_HOME/AGENTS.md`` (or ``CLAUDE.md`` there);
2. in every directory from the git root (the nearest ancestor holding ``.git``; the project
   root when there is none) down to the working directory (when it is inside the project;
   otherwise down to the project root): ``AGENTS.md``, then ``CLAUDE.md``.

Imports: a token ``@path`` in a file's text (outside code spans and fenced blocks, not part of
an e-mail address) names another file, relative to the importing file's directory (``~/`` means
the home directory). An imported file is inserted right after the file that imports it, at most
:data:`MAX_IMPORT_DEPTH` levels deep. Imports are confined like ``read_file``: after resolving
symlinks and ``..`` the target must lie inside the top directory searched (the git root or the
project root; ``$MEMAGENT_HOME`` for the user-level file). The files themselves are confined the
same way: an ``AGENTS.md`` that is a symlink to a file outside that directory (the user's
``~/.aws/credentials``, say) is not read, and a one-line note says so. A cycle (a file importing
one of its importers) is refused with a note; a file already included is not repeated.

Budget: the whole text is capped at ``max_chars``. Files are taken in order; the one that
crosses the budget is truncated and the rest are left out, and the text ends with a note
naming what was cut (the same note is offered as a warning for the user).

The text is computed once, when the feature is built: it goes into the stable system prompt
(byte-identical for the whole session, so the prompt cache keeps hitting) and is re-injected
verbatim after every compaction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from memagent.agent.feature import BaseFeature, SubagentContext
from memagent.markers import Marker

INSTRUCTION_NAMES = ("AGENTS.md", "CLAUDE.md")
MAX_IMPORT_DEPTH = 5
DEFAULT_MAX_CHARS = 40_000
INSTRUCTIONS_HEADER = (
    f"{Marker.INSTRUCTIONS.value} from the project's and the user's instruction files (AGENTS.md, "
    "CLAUDE.md). Follow them; the more specific (later) file wins when two disagree.]"
)
REINJECT_HEADER = f"{Marker.INSTRUCTIONS.value}, re-injected verbatim after the compaction:]"

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_IMPORT = re.compile(r"(?<![\w@`])@((?:~/|\.{1,2}/|/)?[\w.\-/]+[\w\-/])")
_LOOKS_LIKE_PATH = re.compile(r"[/]|\.[A-Za-z0-9]{1,8}$")


@dataclass
class InstructionFile:
    """One file that was found: where, how it came in, and what happened to it."""

    path: Path
    label: str  # shown to the model and the user (relative to the project, or ~/…)
    chars: int = 0
    imported_by: str | None = None
    status: str = "loaded"  # loaded | truncated | omitted
    text: str = ""


@dataclass
class InstructionSet:
    """Everything loaded, in order, plus notes about imports that were refused or missing."""

    files: list[InstructionFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    cut_note: str | None = None

    @property
    def loaded(self) -> list[InstructionFile]:
        return [f for f in self.files if f.status != "omitted"]

    def render(self) -> str | None:
        parts = [f"## {f.label}" + (f" (imported by {f.imported_by})" if f.imported_by else "") + "\n\n" + f.text
                 for f in self.loaded]
        if not parts:
            return None
        tail = [f"[{note}]" for note in self.notes]
        if self.cut_note:
            tail.append(f"[{self.cut_note}]")
        return "\n\n".join([INSTRUCTIONS_HEADER, *parts, *(["\n".join(tail)] if tail else [])])


def git_root(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def instruction_dirs(root: Path, cwd: Path | None = None) -> tuple[Path, list[Path]]:
    """(the confinement base, the directories searched from the top down to ``cwd``, or to
    ``root`` when ``cwd`` is not inside it)."""
    root = root.resolve()
    top = git_root(root) or root
    deepest = cwd.resolve() if cwd is not None else root
    if not _within(deepest, root):
        deepest = root
    chain = [deepest]
    while chain[-1] != top:
        chain.append(chain[-1].parent)
    return top, list(reversed(chain))


def find_imports(text: str) -> list[str]:
    """The ``@path`` tokens of ``text``, ignoring code spans and fenced code blocks."""
    visible = _CODE_SPAN.sub(" ", _FENCE.sub(" ", text))
    found: list[str] = []
    for match in _IMPORT.finditer(visible):
        token = match.group(1)
        if token not in found:
            found.append(token)
    return found


def _label(path: Path, root: Path, home: Path) -> str:
    for base, prefix in ((root, ""), (home, "$MEMAGENT_HOME/")):
        try:
            return prefix + path.relative_to(base).as_posix()
        except ValueError:
            continue
    return str(path)


def _within(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


@dataclass
class _Loader:
    root: Path
    home: Path
    result: InstructionSet = field(default_factory=InstructionSet)
    seen: set[Path] = field(default_factory=set)

    def load(self, path: Path, base: Path, chain: tuple[Path, ...] = (), importer: str | None = None) -> None:
        resolved = path.resolve()
        if not _within(resolved, base):  # a symlink leading out of the project (or $MEMAGENT_HOME)
            where = "$MEMAGENT_HOME" if base == self.home else "the project"
            shown = _label(path.absolute(), self.root, self.home)
            self.result.notes.append(f"{shown}: a symlink to a file outside {where}; not read")
            return
        if resolved in chain:
            self.result.notes.append(
                f"{importer}: import of {_label(resolved, self.root, self.home)} refused (an import cycle)"
            )
            return
        if resolved in self.seen:
            return
        try:
            text = resolved.read_text(encoding="utf-8", errors="replace").strip()
        except OSError as exc:
            self.result.notes.append(f"{_label(resolved, self.root, self.home)}: cannot be read ({exc.strerror or exc})")
            return
        self.seen.add(resolved)
        label = _label(resolved, self.root, self.home)
        self.result.files.append(InstructionFile(resolved, label, len(text), importer, text=text))
        for token in find_imports(text):
            self._import(token, resolved, base, (*chain, resolved), label)

    def _import(self, token: str, importer: Path, base: Path, chain: tuple[Path, ...], label: str) -> None:
        if len(chain) > MAX_IMPORT_DEPTH:
            self.result.notes.append(f"{label}: @{token} not imported (imports nest deeper than {MAX_IMPORT_DEPTH})")
            return
        target = Path(token).expanduser() if token.startswith("~/") else importer.parent / token
        try:
            resolved = target.resolve()
        except (OSError, RuntimeError):
            self.result.notes.append(f"{label}: @{token} cannot be resolved")
            return
        if not _within(resolved, base):
            self.result.notes.append(f"{label}: @{token} refused (outside {_label(base, self.root, self.home) or '.'})")
            return
        if not resolved.is_file():
            if _LOOKS_LIKE_PATH.search(token):
                self.result.notes.append(f"{label}: @{token} not found")
            return
        self.load(resolved, base, chain, label)


def _apply_budget(result: InstructionSet, max_chars: int) -> None:
    used = 0
    truncated: list[str] = []
    omitted: list[str] = []
    for item in result.files:
        room = max_chars - used
        if room <= 0:
            item.status, item.text = "omitted", ""
            omitted.append(item.label)
        elif len(item.text) > room:
            cut = len(item.text) - room
            item.status, item.text = "truncated", item.text[:room] + f"\n[… {cut:,} characters cut]"
            truncated.append(item.label)
            used = max_chars
        else:
            used += len(item.text)
    if truncated or omitted:
        parts = [f"truncated {', '.join(truncated)}" if truncated else "", f"left out {', '.join(omitted)}" if omitted else ""]
        result.cut_note = (
            f"instruction files exceed the budget of {max_chars:,} characters: " + "; ".join(p for p in parts if p)
        )


def load_instructions(
    root: Path, home: Path, max_chars: int = DEFAULT_MAX_CHARS, cwd: Path | None = None
) -> InstructionSet:
    """Find, import and budget the instruction files for a project rooted at ``root``, worked
    on from ``cwd`` (a folder inside it; default: the root)."""
    root = root.resolve()
    home = home.expanduser()
    loader = _Loader(root=root, home=home.resolve() if home.exists() else home)
    for name in INSTRUCTION_NAMES:
        user_file = home / name
        if user_file.is_file():
            loader.load(user_file, loader.home)
            break
    top, directories = instruction_dirs(root, cwd)
    for directory in directories:
        for name in INSTRUCTION_NAMES:
            candidate = directory / name
            if candidate.is_file():
                loader.load(candidate, top)
    _apply_budget(loader.result, max_chars)
    return loader.result


class InstructionsFeature(BaseFeature):
    """The instruction files in the stable system prompt, and again after each compaction."""

    name = "instructions"

    def __init__(
        self,
        root: Path,
        home: Path,
        max_chars: int = DEFAULT_MAX_CHARS,
        *,
        cwd: Path | None = None,
        warn: Callable[[str], None] | None = None,
    ):
        self.instructions = load_instructions(root, home, max_chars, cwd)
        self._text = self.instructions.render()
        for warning in self.warnings if warn is not None else ():
            warn(warning)

    @property
    def files(self) -> list[InstructionFile]:
        return self.instructions.files

    @property
    def warnings(self) -> list[str]:
        """One-line notices for the user (budget cuts, refused or missing imports)."""
        notes = list(self.instructions.notes)
        if self.instructions.cut_note:
            notes.append(self.instructions.cut_note)
        return notes

    def system_text(self) -> str | None:
        return self._text

    def reinject(self) -> str | None:
        return f"{REINJECT_HEADER}\n{self._text}" if self._text else None

    def for_subagent(self, child: SubagentContext) -> "InstructionsFeature":
        return self  # a subagent follows the project's instructions too


def describe_files(files: list[InstructionFile]) -> list[str]:
    """Lines for ``/memory``: each instruction file with its size and status."""
    lines = []
    for item in files:
        via = f", imported by {item.imported_by}" if item.imported_by else ""
        status = "" if item.status == "loaded" else f" — {item.status}"
        lines.append(f"  {item.label} ({item.chars:,} chars{via}){status}")
    return lines


__all__ = [
    "InstructionFile",
    "InstructionSet",
    "InstructionsFeature",
    "describe_files",
    "find_imports",
    "load_instructions",
]
