"""What git says changed under a store's card folders: a cheap way to see a pull, a checkout or a
merge without stamping every card file.

A repository is untrusted input: its configuration can name programs (``core.fsmonitor``, hooks,
diff drivers, filters). :func:`run_git` is the one place memagent's memory runs git, with those
disabled, the user's and the system's git configuration ignored and a clean environment; only
commands that read commits and trees are used (``rev-parse``, ``diff`` between two commits), which
run no filters. Every failure (no git, not a repository, a timeout) means "git cannot tell": the
caller falls back to scanning.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

GIT_TIMEOUT_S = 5.0
_SAFE_CONFIG = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "diff.external=",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "protocol.allow=never",
)


def run_git(args: Sequence[str], cwd: Path) -> str | None:
    """Run ``git <args>`` in ``cwd`` with repository programs disabled; its stdout, or ``None``."""
    git = shutil.which("git")
    if git is None:
        return None
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "HOME": os.devnull,
        "LC_ALL": "C",
        "GIT_TERMINAL_PROMPT": "0",
    }
    try:
        done = subprocess.run(
            [git, "--no-pager", *_SAFE_CONFIG, *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "surrogateescape")


def head_commit(folder: Path) -> str | None:
    """The commit checked out in the repository holding ``folder`` (``None``: no repository)."""
    if not folder.is_dir():
        return None
    out = run_git(["rev-parse", "--verify", "-q", "HEAD"], folder)
    head = out.strip() if out else ""
    return head if len(head) in (40, 64) and all(c in "0123456789abcdef" for c in head) else None


def changed_between(folder: Path, old: str, new: str, subfolders: Sequence[Path]) -> list[Path] | None:
    """Files under ``subfolders`` that differ between commits ``old`` and ``new`` (added, changed
    or deleted), as absolute paths; ``None`` when git cannot tell (e.g. ``old`` is gone)."""
    if not all(len(c) in (40, 64) and all(x in "0123456789abcdef" for x in c) for c in (old, new)):
        return None
    top = run_git(["rev-parse", "--show-toplevel"], folder)
    if not top:
        return None
    root = Path(top.strip())
    specs = []
    for sub in subfolders:
        try:
            specs.append(str(sub.resolve().relative_to(root.resolve())))
        except ValueError:
            return None
    out = run_git(
        ["diff", "--name-only", "--no-renames", "--no-ext-diff", "--no-textconv", "-z", old, new, "--", *specs], root
    )
    if out is None:
        return None
    return [root / name for name in out.split("\0") if name]


__all__ = ["changed_between", "head_commit", "run_git"]
