"""Tab completion in the REPL: slash commands at the start of the line, project paths after ``@``."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

MAX_PATH_COMPLETIONS = 200
_AT_TOKEN = re.compile(r'(?:^|(?<=\s))@([^\s"]*)$')


def path_candidates(root: Path, fragment: str, limit: int = MAX_PATH_COMPLETIONS) -> list[str]:
    """Project paths (relative to ``root``) that complete ``fragment``; directories end in ``/``.

    Completion goes one directory level at a time, never leaves the project, and skips the
    directories ``glob`` ignores (``.git``, ``node_modules``, memagent's own data, …)."""
    from memagent.tools.paths import IGNORED_DIR_NAMES  # not at import: the prompt must not wait for pydantic

    root = root.resolve()
    head, _, prefix = fragment.rpartition("/")
    directory = (root / head).resolve() if head else root
    if directory != root and root not in directory.parents:
        return []
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return []
    found = []
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        if entry.name.startswith(".") and not prefix.startswith("."):
            continue
        is_dir = entry.is_dir()
        if is_dir and entry.name in IGNORED_DIR_NAMES:
            continue
        found.append((f"{head}/" if head else "") + entry.name + ("/" if is_dir else ""))
        if len(found) >= limit:
            break
    return found


class ReplCompleter(Completer):
    """``/he`` → ``/help``; ``look at @src/ap`` → ``@src/app.py``."""

    def __init__(
        self,
        root: Path,
        command_names: Callable[[], Iterable[str]],
        command_meta: Callable[[], dict[str, str]] | None = None,
    ):
        self.root = root
        self.command_names = command_names
        self.command_meta = command_meta  # name → "ARG-HINT — description", shown beside a command

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and " " not in before and "\n" not in before:
            typed = before[1:].lower()
            meta = self.command_meta() if self.command_meta is not None else {}
            for name in sorted(set(self.command_names())):
                if name.lower().startswith(typed):
                    yield Completion("/" + name, start_position=-len(before), display_meta=meta.get(name, ""))
            return
        match = _AT_TOKEN.search(before)
        if match is None:
            return
        fragment = match.group(1)
        for candidate in path_candidates(self.root, fragment):
            yield Completion(candidate, start_position=-len(fragment), display=candidate)


__all__ = ["ReplCompleter", "path_candidates"]
