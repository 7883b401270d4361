"""Paths inside a project that carry power, and so stay out of reach of what runs there.

A repository is untrusted input, and the agent (or a command it runs) can write anywhere in
the working tree. Some files in the tree, though, decide what runs later with the user's full
power: git's configuration and hooks (``core.fsmonitor``, ``pre-commit``), a ``.git`` *file*
that points git elsewhere, submodule definitions, and the configuration of memagent and of the
other agents a user runs in the same folder (settings, MCP servers, hooks, skills, commands),
and the files git-hook frameworks (pre-commit, lefthook, husky) run on the user's next commit.

This module is the one list of those paths. Two parts read it:

- the sandbox mounts each of them read-only (and keeps a missing one from being created, or
  removes it when the command ends), so a sandboxed command cannot plant them;
- the gate treats a file-tool write to one of them as *protected*: it asks even where edits are
  otherwise approved (``acceptEdits``).

Leaf module: it imports nothing of memagent.
"""

from __future__ import annotations

from pathlib import PurePosixPath

# Project-relative paths of files, and of folders (with everything under them).
PROTECTED_FILES = (
    ".git/config",
    ".gitmodules",
    ".memagent.toml",
    ".mcp.json",
    # read by installed git hooks (pre-commit, lefthook) on the user's next commit
    ".pre-commit-config.yaml",
    "lefthook.yml",
    "lefthook.yaml",
    ".lefthook.yml",
    ".lefthook.yaml",
    "lefthook-local.yml",
    "lefthook-local.yaml",
)
PROTECTED_FOLDERS = (
    ".git/hooks",
    ".git/info",
    ".git/worktrees",  # each linked worktree's commondir, gitdir and config.worktree
    ".memagent",
    ".claude",
    ".agents",
    ".codex",
    ".gemini",
    ".vscode",
    ".husky",  # git hooks husky installs (core.hooksPath)
)
# Files git reads for its configuration and hooks that a git folder usually lacks: ``commondir``
# points git at another folder (git reads it in any git folder, not only a linked worktree's),
# ``config.worktree`` is configuration once ``extensions.worktreeConfig`` is set. A stand-in
# folder would stop git (it must read the file if the name exists), so in the sandbox a missing
# one is kept missing instead: one a command created is removed when the command ends.
GIT_REDIRECTS = (".git/commondir", ".git/config.worktree")
# Read-only when ``.git`` is a *file* (``gitdir: …``): it names where git keeps its data.
GIT_LINK = ".git"

# Files whose content decides what memagent may do in a project: trusting a project pins a
# digest of each (a changed one asks again).
POWER_FILES = (
    ".memagent.toml",
    ".mcp.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
)


def protected_reason(relative: str | PurePosixPath) -> str | None:
    """Why a project-relative path is protected (one phrase), or None when it is not.

    ``relative`` uses ``/``; a leading ``./`` is ignored. Names are compared exactly (``.git``
    as git spells it; a case-folding file system is not assumed)."""
    parts = [p for p in PurePosixPath(str(relative)).parts if p not in ("", ".")]
    if not parts:
        return None
    text = "/".join(parts)
    for name in PROTECTED_FILES:
        if text == name:
            return f"{name} configures what runs in this project"
    for folder in PROTECTED_FOLDERS:
        if text == folder or text.startswith(folder + "/"):
            return f"{folder}/ configures what runs in this project"
    if text in GIT_REDIRECTS:
        return f"{text} tells git where its configuration and hooks are"
    if parts[0] == GIT_LINK and len(parts) == 1:
        return ".git tells git where this repository lives"
    return None


def is_protected(relative: str | PurePosixPath) -> bool:
    """True when writing this project-relative path could widen what runs later."""
    return protected_reason(relative) is not None


__all__ = [
    "GIT_LINK",
    "GIT_REDIRECTS",
    "POWER_FILES",
    "PROTECTED_FILES",
    "PROTECTED_FOLDERS",
    "is_protected",
    "protected_reason",
]
