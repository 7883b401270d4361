"""Git repositories a command plants inside the working tree, armed for the user's next git.

The sandbox keeps the project's own git configuration and hooks read-only, but a repository
*nested* in the working tree (``vendor/lib/.git``) is part of the tree, so a command can create
one whose configuration names a program (``core.fsmonitor``, a hook, a filter driver …). The
user's git runs git inside every nested repository the index registers (a gitlink: a command can
write the index, and the user's own ``git add -A`` registers one), so their next ``git status``
would run that program on the host, with their environment.

After each sandboxed command in a git project, :func:`disarm_planted` lists the nested
repositories (gitlinks of the index, and untracked nested repositories — both through
memagent's safe git, which runs nothing) and, for each whose git folder changed during the
command and that is *armed* — a configuration key that names a program, an ``include``, an
executable hook, a ``commondir`` or ``config.worktree``, or a ``.git`` file naming a folder
outside the project — renames its ``.git`` to ``.git.disabled-by-memagent`` (nothing is
deleted; renaming it back re-arms it). A clone or ``git init`` that configures nothing is left
alone, and so is every nested repository the command did not touch.
"""

from __future__ import annotations

import os
import stat
from contextlib import suppress
from pathlib import Path

from memagent.gitsafe import GitError, config_names, names_a_program, run_git

DISABLED_SUFFIX = ".disabled-by-memagent"
GIT = ".git"


def nested_repositories(root: Path) -> list[Path]:
    """Folders of the working tree below ``root`` that hold their own ``.git`` and that the
    user's git would enter or register: gitlinks of the index, untracked nested repositories."""
    found: dict[Path, None] = {}
    try:
        staged = run_git(["ls-files", "--stage", "-z"], root)
        untracked = run_git(["ls-files", "--others", "--exclude-standard", "-z"], root)
    except GitError:
        return []
    for entry in staged.stdout.split("\0"):
        mode, _, rest = entry.partition(" ")
        if mode == "160000" and "\t" in rest:
            found[root / rest.split("\t", 1)[1]] = None
    for entry in untracked.stdout.split("\0"):
        if entry.endswith("/"):
            found[root / entry.rstrip("/")] = None
    return [folder for folder in found if os.path.lexists(folder / GIT)]


def _git_folder(repo: Path, root: Path) -> Path | None:
    """The git folder of a nested repository: its ``.git`` folder, or the folder a ``.git`` file
    names when that lies inside the project (None: it names something outside)."""
    marker = repo / GIT
    if marker.is_dir() and not marker.is_symlink():
        return marker
    try:
        line = marker.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    target = Path(os.path.realpath(repo / line.removeprefix("gitdir:").strip()))
    real_root = Path(os.path.realpath(root))
    return target if line.startswith("gitdir:") and real_root in target.parents else None


def _changed_since(repo: Path, gitdir: Path | None, since_ns: int) -> bool:
    paths = [repo / GIT]
    if gitdir is not None:
        paths += [gitdir, gitdir / "config", gitdir / "hooks", gitdir / "commondir", gitdir / "config.worktree"]
    for path in paths:
        with suppress(OSError):
            st = path.lstat()
            if max(st.st_mtime_ns, st.st_ctime_ns) >= since_ns:
                return True
    return False


def armed(repo: Path, root: Path) -> str | None:
    """Why the nested repository would run a program for the user's git (one phrase), or None."""
    gitdir = _git_folder(repo, root)
    if gitdir is None:
        return "its .git names a folder outside the project"
    for name in ("commondir", "config.worktree"):
        if os.path.lexists(gitdir / name):
            return f"its git folder has a {name}"
    try:
        programs = [n for n in config_names(gitdir / "config") if names_a_program(n)]
    except GitError:
        return "its git configuration cannot be read safely"
    if programs:
        return f"its git configuration names a program ({programs[0]})"
    hooks = gitdir / "hooks"
    with suppress(OSError):
        for hook in hooks.iterdir():
            st = hook.lstat()
            if not hook.name.endswith(".sample") and (stat.S_ISLNK(st.st_mode) or st.st_mode & 0o111):
                return f"it has a {hook.name} hook"
    return None


def disarm_planted(root: Path, since_ns: int) -> list[str]:
    """Rename the ``.git`` of every armed nested repository changed since ``since_ns`` (see the
    module docstring); one line per repository disarmed."""
    if not (root / GIT).is_dir():
        return []
    notes = []
    for repo in nested_repositories(root):
        gitdir = _git_folder(repo, root)
        if not _changed_since(repo, gitdir, since_ns):
            continue
        reason = armed(repo, root)
        if reason is None:
            continue
        target = repo / (GIT + DISABLED_SUFFIX)
        with suppress(OSError):
            os.rename(repo / GIT, target)
            notes.append(f"{repo.relative_to(root)}: {reason}; its .git was renamed {target.name}")
    return notes


__all__ = ["DISABLED_SUFFIX", "armed", "disarm_planted", "nested_repositories"]
