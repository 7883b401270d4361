"""The instructions feature: the instruction files Claude Code and Codex read, in their order.

Loads the instruction files at session start (:mod:`memagent.instructions`: which files, their
order, imports, confinement and budget), puts them in the stable system prompt, and adds the
files of folders below the working directory and path-scoped rules the first time the agent
touches something there.
"""

from __future__ import annotations

import copy
import fnmatch
import re
from collections.abc import Callable
from pathlib import Path

from memagent.agent.feature import BaseFeature, SubagentContext, ToolCall
from memagent.instructions import (
    DEFAULT_MAX_CHARS,
    DIRECTORY_FILES,
    LOCAL_FILE,
    NESTED_HEADER,
    HeldRule,
    InstructionFile,
    InstructionSet,
    Loader,
    Places,
    find_imports,
    git_root,
    instruction_dirs,
    load_instructions,
    rule_paths,
    within,
)
from memagent.llm.items import Injected, message_items
from memagent.llm.types import Message
from memagent.markers import Marker
from memagent.tools.base import ToolOutcome

_PATH_KEYS = ("file_path", "path", "notebook_path")


def _touched(call: ToolCall, root: Path) -> Path | None:
    """The file or folder a tool call works on, if it names one inside the project."""
    for key in _PATH_KEYS:
        raw = call.input.get(key) if isinstance(call.input, dict) else None
        if isinstance(raw, str) and raw.strip():
            candidate = Path(raw).expanduser()
            candidate = candidate if candidate.is_absolute() else root / candidate
            try:
                resolved = candidate.resolve()
            except (OSError, RuntimeError):
                return None
            return resolved if within(resolved, root) else None
    return None


class InstructionsFeature(BaseFeature):
    """The instruction files in the stable system prompt; nested folders' files and path rules
    added after the tool results that first reach them."""

    name = "instructions"

    def __init__(
        self,
        root: Path,
        home: Path,
        max_chars: int = DEFAULT_MAX_CHARS,
        *,
        cwd: Path | None = None,
        user_home: Path | None = None,
        trusted: bool = False,
        warn: Callable[[str], None] | None = None,
    ):
        self.root = root.resolve()
        self.home, self.user_home, self.trusted, self.max_chars = home, user_home, trusted, max_chars
        self._held: list[HeldRule] = []
        self.instructions = load_instructions(
            root, home, max_chars, cwd, user_home=user_home, trusted=trusted, held=self._held
        )
        self._text = self.instructions.render()
        _, chain = instruction_dirs(self.root, cwd)
        self._visited: set[Path] = set(chain)
        self._seen: set[Path] = {f.path for f in self.instructions.files}
        self._pending: list[Path] = []
        self._origin: dict[Path, Path | HeldRule] = {}  # a later file → the folder or rule it came with
        self._later_used = 0
        self.later: list[InstructionFile] = []  # files loaded during the session, in order
        self._warn = warn
        if warn is not None:
            for warning in self.warnings:
                warn(warning)

    @property
    def files(self) -> list[InstructionFile]:
        return self.instructions.files + self.later

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
        return None  # the system prompt survives a compaction: sending the files again would double them

    def for_subagent(self, child: SubagentContext) -> InstructionsFeature:
        """A subagent follows the project's instructions too: the same system text, and files it
        reaches later loaded into its own conversation (its own record of what it has seen, so a
        child's reads neither steal nor race the parent's late-loaded files)."""
        twin = copy.copy(self)
        twin._held = list(self._held)
        twin._visited = set(self._visited)
        twin._seen = set(self._seen)
        twin._pending = []
        twin._origin = dict(self._origin)
        twin.later = list(self.later)
        return twin

    # ------------------------------------------------------------------ files loaded later

    def after_tool(self, call: ToolCall, outcome: ToolOutcome) -> None:
        touched = _touched(call, self.root)
        if touched is not None:
            self._pending.append(touched)

    def after_tools(self, names: list[str]) -> Injected | None:
        pending, self._pending = self._pending, []
        blocks = [block for path in pending if (block := self._reach(path))]
        return Injected(Marker.INSTRUCTIONS, "\n\n".join(blocks)) if blocks else None

    def before_drop(self, messages: list[Message], ids: list[str]) -> None:
        """A dropped block of later files: forget them, so the next touch loads them again."""
        for message in messages:
            for part in message_items(message):
                if (
                    isinstance(part, Injected)
                    and part.kind is Marker.INSTRUCTIONS
                    and part.text.startswith(NESTED_HEADER.split("{")[0])
                ):
                    self._forget(part.text)

    def _forget(self, text: str) -> None:
        for item in list(self.later):
            if f"## {item.label}" not in text:
                continue
            self.later.remove(item)
            self._seen.discard(item.path)
            origin = self._origin.pop(item.path, None)
            if isinstance(origin, HeldRule):
                self._held.append(origin)
            elif origin is not None:
                self._visited.discard(origin)

    def _reach(self, path: Path) -> str | None:
        """The block of files this path brings in for the first time, or None."""
        folder = path if path.is_dir() else path.parent
        places = Places(
            self.root,
            git_root(self.root) or self.root,
            self.home.expanduser(),
            (self.user_home or Path.home()).expanduser(),
            self.trusted,
        )
        loader = Loader(places, seen=set(self._seen))
        origins: list[tuple[int, Path | HeldRule]] = []
        for directory in self._new_dirs(folder):
            for name in (*DIRECTORY_FILES, LOCAL_FILE):
                if (directory / name).is_file():
                    origins.append((len(loader.result.files), directory))
                    loader.load(directory / name, (places.top,))
        relative = path.relative_to(self.root).as_posix()
        for rule in list(self._held):
            if any(fnmatch.fnmatchcase(relative, glob) or _glob_match(relative, glob) for glob in rule.globs):
                self._held.remove(rule)
                origins.append((len(loader.result.files), rule))
                loader.load(rule.path, (places.top,), text=rule.text)
        for index, item in enumerate(loader.result.files):  # imports come with the file that imported them
            self._origin[item.path] = next(origin for start, origin in reversed(origins) if start <= index)
        return self._render_later(loader.result, folder)

    def _new_dirs(self, folder: Path) -> list[Path]:
        if not within(folder, self.root):
            return []
        chain: list[Path] = []
        current = folder
        while current not in self._visited and within(current, self.root):
            chain.append(current)
            current = current.parent
        self._visited.update(chain)
        return list(reversed(chain))

    def _render_later(self, found: InstructionSet, folder: Path) -> str | None:
        fresh = [f for f in found.files if f.path not in self._seen]
        for note in found.notes:
            if self._warn is not None:
                self._warn(note)
        if not fresh:
            return None
        room = self.max_chars - self._later_used
        kept = InstructionSet(notes=list(found.notes))
        for item in fresh:
            self._seen.add(item.path)
            if room <= 0:
                kept.notes.append(f"{item.label} left out: the budget for instruction files is used up")
                continue
            if len(item.text) > room:
                item.text, item.status = (
                    item.text[:room] + f"\n[… {len(item.text) - room:,} characters cut]",
                    "truncated",
                )
            room -= len(item.text)
            kept.files.append(item)
            self.later.append(item)
        self._later_used = self.max_chars - max(room, 0)
        where = "the project root" if folder == self.root else folder.relative_to(self.root).as_posix() + "/"
        return kept.render(NESTED_HEADER.format(where=where))


def _glob_match(relative: str, glob: str) -> bool:
    """gitignore-style: ``**/`` spans folders (``src/**/*.py`` matches ``src/a.py``)."""
    pattern = (
        re.escape(glob)
        .replace(r"\*\*/", "(?:.*/)?")
        .replace(r"\*\*", ".*")
        .replace(r"\*", "[^/]*")
        .replace(r"\?", "[^/]")
    )
    return re.fullmatch(pattern, relative) is not None


def describe_files(files: list[InstructionFile]) -> list[str]:
    """Lines for ``/memory``: each instruction file with its size and status."""
    lines = []
    for item in files:
        via = f", imported by {item.imported_by}" if item.imported_by else ""
        status = "" if item.status == "loaded" else f" — {item.status}"
        lines.append(f"  {item.label} ({item.chars:,} chars{via}){status}")
    return lines


__all__ = [
    "HeldRule",
    "InstructionFile",
    "InstructionSet",
    "InstructionsFeature",
    "describe_files",
    "find_imports",
    "load_instructions",
    "rule_paths",
]
