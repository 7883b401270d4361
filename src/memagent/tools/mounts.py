"""What a sandboxed command sees: the mount plan, computed from the project and the machine.

The plan is data (lists of paths by role), so ``doctor`` can show it and tests can read it;
:mod:`memagent.tools.sandbox` turns it into ``bwrap`` arguments. Roles, in the order they are
mounted (a later mount covers an earlier one):

1. **read-only**: the whole file system;
2. **private scratch**: ``/tmp`` and ``/var/tmp``, fresh and empty;
3. **hidden**: the home folder (an empty, private, writable tmpfs), ``$MEMAGENT_HOME``, the
   folders that hold the machine's service sockets (``/run`` with ``$XDG_RUNTIME_DIR``, …), every
   other listening Unix socket outside the project (found in ``/proc/net/unix``), other
   projects' ``.transcripts`` and private cards (``.memory/private``; every project
   ``$MEMAGENT_HOME/projects.json`` knows), and the
   ``sandbox_hidden`` setting. When the project *is* the home folder (or holds it), the home
   folder cannot be hidden as a whole and its secret entries (:data:`SECRET_HOME_ENTRIES`) are
   hidden one by one;
4. **caches**: tool caches and toolchains in the home folder, read-only
   (:data:`DEFAULT_CACHES` plus the ``sandbox_caches`` setting) — never their credential files;
5. **writable**: the project's working tree (and ``sandbox_writable``); its ``.git`` folder is
   bound onto itself, so it cannot be renamed away and replaced by a ``.git`` file;
6. **protected**: the project paths that carry power (:mod:`memagent.protected`, plus the folder
   ``core.hooksPath`` names when it is in the working tree), read-only on
   top of the writable tree. One that does not exist yet gets a read-only *placeholder* (an
   empty folder) for the length of the command, so it cannot be created from inside; the
   placeholder is removed afterwards.

Nothing a project file names is ever mounted writable: a ``.git`` *file* (``gitdir: …``, a
linked worktree or a submodule) is itself read-only, and the git folder of a linked worktree is
shown read-only — only when it names this worktree back (:func:`linked_git_folder`) — so
``git status``/``log``/``diff`` work there but ``git commit`` fails ("Read-only file system").

A protected path that is a *symlink* cannot be protected (a mount follows it, and the link
itself could be replaced): :attr:`MountPlan.refusal` then says why no command may run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from memagent.gitsafe import GitError, config_value
from memagent.paths import data_roots
from memagent.protected import GIT_LINK, GIT_REDIRECTS, PROTECTED_FILES, PROTECTED_FOLDERS

# Home entries hidden one by one when the home folder itself cannot be hidden.
SECRET_HOME_ENTRIES = (
    ".ssh", ".aws", ".config", ".gnupg", ".netrc", ".docker", ".kube", ".azure", ".gcloud",
    ".password-store", ".pgpass", ".git-credentials", ".npmrc", ".pypirc", ".vault-token",
    ".terraform.d", ".cargo/credentials", ".cargo/credentials.toml", ".local/share/keyrings",
    ".bash_history", ".zsh_history", ".python_history", ".psql_history", ".mysql_history",
    ".node_repl_history", ".sqlite_history", ".lesshst", ".mozilla", ".pki", ".anthropic",
    ".claude", ".memagent", ".m2", ".gradle", ".boto", ".s3cfg", ".env", ".transcripts",
)  # fmt: skip
# Tool caches and toolchains under the home folder that commands may read (never write):
# package caches, not the files that hold registry credentials (``~/.npmrc``,
# ``~/.m2/settings.xml``, ``~/.gradle/gradle.properties``, ``~/.cargo/credentials.toml``).
DEFAULT_CACHES = (
    ".cache/pip", ".cache/uv", ".cache/pypoetry", ".cache/go-build", ".cache/yarn", ".cache/pnpm",
    ".npm/_cacache", ".cargo/registry", ".cargo/git", ".cargo/bin", ".rustup", "go/pkg/mod",
    ".m2/repository", ".gradle/caches", ".gradle/wrapper", ".ivy2/cache", ".sbt/boot",
    ".pyenv", ".nvm", ".volta", ".local/bin", ".local/lib", ".local/share/uv", ".sdkman/candidates",
    ".asdf/installs", ".bun/bin", ".deno/bin",
)  # fmt: skip
# Folders that hold service sockets (docker, D-Bus, systemd, ssh-agent …).
SOCKET_FOLDERS = ("/run", "/var/run", "/var/lib/docker", "/tmp/.X11-unix")
PRIVATE_SCRATCH = ("/tmp", "/var/tmp")
PROC_NET_UNIX = Path("/proc/net/unix")
PROJECTS_FILE = "projects.json"
# With the network allowed, name resolution needs this file (often a link into /run).
RESOLV_CONF = "/etc/resolv.conf"


@dataclass(frozen=True)
class MountPlan:
    """Paths by role (see the module docstring); all absolute and resolved."""

    root: Path
    scratch: list[Path] = field(default_factory=list)
    hidden: list[Path] = field(default_factory=list)
    caches: list[Path] = field(default_factory=list)
    writable: list[Path] = field(default_factory=list)
    protected: list[Path] = field(default_factory=list)  # existing: bound read-only
    placeholders: list[Path] = field(default_factory=list)  # missing: an empty read-only folder
    kept_missing: list[Path] = field(default_factory=list)  # missing: removed if the command makes it
    keep_visible: list[Path] = field(default_factory=list)  # re-shown read-only inside a hidden folder
    refusal: str | None = None

    def describe(self) -> list[str]:
        """One line per role, for ``memagent doctor``."""

        def names(paths: Iterable[Path], limit: int = 12) -> str:
            shown = [_short(p, self.root) for p in paths]
            more = f" (+{len(shown) - limit} more)" if len(shown) > limit else ""
            return (", ".join(shown[:limit]) + more) or "none"

        lines = [
            f"writable: {names(self.writable)}",
            f"read-only, protected: {names(self.protected, 20)}",
            f"protected while missing (an empty read-only stand-in during each command): {names(self.placeholders, 20)}",
            f"kept missing (removed when a command creates it): {names(self.kept_missing)}",
            f"hidden: {names(self.hidden)}",
            f"allowed caches (read-only): {names(self.caches)}",
        ]
        if self.keep_visible:
            lines.append(f"shown read-only inside a hidden folder: {names(self.keep_visible)}")
        if self.refusal:
            lines.append(f"refused: {self.refusal}")
        return lines


def _short(path: Path, root: Path) -> str:
    try:
        relative = path.relative_to(root).as_posix()
        return "<project>" if relative == "." else f"<project>/{relative}"
    except ValueError:
        return str(path)


def real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


# --- protected paths -----------------------------------------------------------------------


def _protected_candidates(root: Path) -> list[tuple[str, bool]]:
    """(project-relative path, is a folder) of every protected path that applies to ``root``."""
    git = root / GIT_LINK
    git_is_dir = git.is_dir() and not git.is_symlink()
    found: list[tuple[str, bool]] = [(GIT_LINK, True)] if not git_is_dir else []
    for name in PROTECTED_FILES:
        if not name.startswith(GIT_LINK + "/") or git_is_dir:
            found.append((name, False))
    for name in PROTECTED_FOLDERS:
        if not name.startswith(GIT_LINK + "/") or git_is_dir:
            found.append((name, True))
    hooks = configured_hooks_dir(root) if git_is_dir else None
    if hooks is not None:
        found.append((hooks, True))
    if git_is_dir:  # the git folders of submodules run their own config and hooks
        for config in sorted((git / "modules").glob("**/config")):
            relative = config.relative_to(root).as_posix()
            found += [(relative, False), (relative.removesuffix("config") + "hooks", True)]
    return found


def configured_hooks_dir(root: Path) -> str | None:
    """The project-relative folder ``core.hooksPath`` names when it lies in the working tree
    (``.githooks``, ``.husky/_``): its hooks run on the user's next commit, so it is protected
    like ``.git/hooks``. Read with memagent's safe git (nothing runs)."""
    try:
        value = config_value(root, "core.hooksPath")
    except GitError:
        return None
    if not value:
        return None
    folder = Path(os.path.normpath(root / Path(value).expanduser()))
    if folder == root or root not in folder.parents:
        return None
    return folder.relative_to(root).as_posix()


def protected_mounts(root: Path) -> tuple[list[Path], list[Path], str | None]:
    """(existing protected paths, missing ones to hold with a placeholder, a refusal).

    A path under another protected one is already read-only and is not listed again. A missing
    path whose folder is missing too is held at its first missing folder (so ``mkdir -p`` cannot
    make the way to it)."""
    existing: list[Path] = []
    missing: list[Path] = []
    candidates = sorted({root / relative for relative, _ in _protected_candidates(root)}, key=lambda p: len(p.parts))
    for path in candidates:
        if any(inside(path, done) for done in (*existing, *missing)):
            continue
        if any(p.is_symlink() for p in _between(root, path)):
            relative = path.relative_to(root).as_posix()
            return [], [], f"{relative} is a symlink: the sandbox cannot keep it read-only (replace the link)"
        if os.path.lexists(path):
            existing.append(path)
            continue
        hold = _first_missing(root, path)
        if hold.parent.is_dir() and os.access(hold.parent, os.W_OK) and hold not in missing:
            missing.append(hold)  # (an unwritable folder: nothing can be made inside it either)
    return existing, missing, None


def git_redirects(root: Path) -> list[Path]:
    """The files that redirect the project's git configuration (``.git/commondir``,
    ``.git/config.worktree``) when ``.git`` is a real folder: bound read-only when present, kept
    missing when not."""
    git = root / GIT_LINK
    if not git.is_dir() or git.is_symlink():
        return []
    return [root / name for name in GIT_REDIRECTS]


def _first_missing(root: Path, path: Path) -> Path:
    """The highest folder (or ``path`` itself) between ``root`` and ``path`` that does not exist."""
    for candidate in reversed(_between(root, path)):
        if not os.path.lexists(candidate):
            return candidate
    return path


def _between(root: Path, path: Path) -> list[Path]:
    """The folders from ``root`` (excluded) down to ``path`` (included)."""
    chain: list[Path] = []
    while path != root and root in path.parents:
        chain.append(path)
        path = path.parent
    return chain


def linked_git_folder(root: Path) -> Path | None:
    """The common git folder of a linked worktree whose ``.git`` file names it — only when that
    folder names this worktree back (``<common>/worktrees/<name>/gitdir`` is ``<root>/.git``),
    so a crafted ``.git`` file cannot bring anything else into view. Mounted read-only."""
    marker = root / GIT_LINK
    try:
        if marker.is_symlink() or not marker.is_file():
            return None
        line = marker.read_text(encoding="utf-8", errors="replace").strip()
        if not line.startswith("gitdir:"):
            return None
        gitdir = real(root / line.removeprefix("gitdir:").strip())
        back = (gitdir / "gitdir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    common = gitdir.parent.parent
    if gitdir.parent.name != "worktrees" or real(Path(back)) != real(marker):
        return None
    if not all((common / part).exists() for part in ("HEAD", "objects", "refs")):
        return None
    return common


# --- hidden paths --------------------------------------------------------------------------


def listening_sockets() -> list[Path]:
    """Paths of the Unix sockets bound on this machine (``/proc/net/unix``; abstract ones are
    cut with the network namespace)."""
    try:
        lines = PROC_NET_UNIX.read_text(encoding="utf-8", errors="replace").splitlines()[1:]
    except OSError:
        return []
    found: dict[Path, None] = {}
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith("/"):
            found[Path(fields[7])] = None
    return list(found)


# What another project keeps that only its own sessions may read: transcripts, and everything of
# its memory store that git must not see (``.memory/local``: private cards, history, index; the
# layout before that kept private cards in ``.memory/private``).
OTHER_PROJECTS_DATA = (".transcripts", ".memory/local", ".memory/private")


def known_projects(memagent_home: Path | None) -> list[Path]:
    """Every project ``$MEMAGENT_HOME/projects.json`` knows (trusted or not), and every project
    where a session kept a transcript (``$MEMAGENT_HOME/data-roots``)."""
    if memagent_home is None:
        return []
    found = data_roots(memagent_home)
    try:
        data = json.loads((memagent_home / PROJECTS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return found
    projects = data.get("projects") if isinstance(data, dict) else None
    if isinstance(projects, dict):
        found += [Path(key) for key in projects if isinstance(key, str) and key.startswith("/")]
    return list(dict.fromkeys(found))


def _existing_real(paths: Iterable[Path]) -> list[Path]:
    found: dict[Path, None] = {}
    for path in paths:
        if os.path.lexists(path):
            found[real(path)] = None
    return list(found)


@dataclass(frozen=True)
class HomeView:
    """How the home folder looks inside: hidden whole, or (when it holds the project) piecemeal."""

    home: Path
    whole: bool

    def hidden(self, extra_secrets: Iterable[str] = ()) -> list[Path]:
        if self.whole:
            return [self.home]
        return [self.home / entry for entry in (*SECRET_HOME_ENTRIES, *extra_secrets)]


def hidden_paths(
    root: Path, home: Path, memagent_home: Path | None, extra: Iterable[Path], scratch: Iterable[str]
) -> list[Path]:
    """Everything covered inside (see the module docstring), minus what holds the project."""
    view = HomeView(home, whole=not inside(home, root) and home != Path("/"))
    wanted: list[Path] = [*view.hidden(), *extra]
    if memagent_home is not None:
        wanted.append(memagent_home)
    wanted += [Path(p) for p in SOCKET_FOLDERS]  # $XDG_RUNTIME_DIR lives in /run/user/<uid>
    wanted += [p / data for p in known_projects(memagent_home) if real(p) != root for data in OTHER_PROJECTS_DATA]
    covered = [Path(s) for s in scratch]
    found: list[Path] = []
    for path in _existing_real(wanted):
        holds_project = inside(root, path) and not (view.whole and path == home)  # the project is bound back
        if holds_project or path == Path("/") or any(inside(path, c) for c in covered):
            continue
        found.append(path)
    for sock in listening_sockets():
        if os.path.lexists(sock) and not inside(real(sock), root) and not _under_any(real(sock), [*found, *covered]):
            found.append(real(sock))
    return found


def _under_any(path: Path, folders: Iterable[Path]) -> bool:
    return any(inside(path, folder) for folder in folders)


def cache_paths(home: Path, root: Path, extra: Iterable[str], hidden: Iterable[Path]) -> list[Path]:
    """Existing tool caches under the home folder (defaults plus ``extra``), when the home folder
    is hidden; each must resolve inside the home folder and outside every other hidden path."""
    hidden = [h for h in hidden if h != home]
    found: list[Path] = []
    for entry in (*DEFAULT_CACHES, *extra):
        candidate = Path(entry).expanduser()
        path = real(candidate if candidate.is_absolute() else home / candidate)
        if path.is_dir() and inside(path, home) and path != home and not inside(root, path):
            if not _under_any(path, hidden) and path not in found:
                found.append(path)
    return found


def plan_mounts(
    root: Path,
    *,
    home: Path,
    memagent_home: Path | None = None,
    writable: Iterable[Path] = (),
    hidden: Iterable[Path] = (),
    caches: Iterable[str] = (),
    scratch: Iterable[str] = PRIVATE_SCRATCH,
    network: bool = False,
) -> MountPlan:
    """The mount plan for a command run in ``root``."""
    root = real(root)
    home = real(home)
    scratch = [s for s in scratch if os.path.isdir(s)]
    covered = hidden_paths(root, home, memagent_home, hidden, scratch)
    home_hidden = home in covered
    allowed = cache_paths(home, root, caches, covered) if home_hidden else []
    extra_writable = [p for p in _existing_real(writable) if p != root]
    linked = linked_git_folder(root)
    git = root / GIT_LINK  # bound onto itself: a mount point cannot be renamed or replaced
    pinned = [git] if git.is_dir() and not git.is_symlink() else []
    existing, missing, refusal = protected_mounts(root)
    redirects = git_redirects(root)
    keep = [dns for dns in _existing_real([Path(RESOLV_CONF)]) if network and _under_any(dns, covered)]
    if linked is not None and not inside(linked, root):
        keep.append(linked)
    return MountPlan(
        root=root,
        scratch=[Path(s) for s in scratch],
        hidden=covered,
        caches=allowed,
        writable=[root, *pinned, *extra_writable],
        protected=[*existing, *(p for p in redirects if os.path.lexists(p))],
        placeholders=missing,
        kept_missing=[p for p in redirects if not os.path.lexists(p)],
        keep_visible=keep,
        refusal=refusal,
    )


__all__ = [
    "DEFAULT_CACHES",
    "MountPlan",
    "SECRET_HOME_ENTRIES",
    "known_projects",
    "listening_sockets",
    "plan_mounts",
    "protected_mounts",
]
