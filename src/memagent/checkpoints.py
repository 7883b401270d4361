"""Checkpoints of a project's working tree, kept in a shadow git repository outside the project.

Before each user turn the session records the working tree as a commit of a git repository of
memagent's own: ``$MEMAGENT_HOME/checkpoints/<project-id>/`` is its git folder, and the project
is its work tree (``--git-dir`` / ``--work-tree``). The project's own repository — its index,
branches, stash, configuration and hooks — is never read or written; a project without git is
covered the same way. Restoring a checkpoint puts the tree back as it was at the start of that
turn, whatever changed it (``write_file``, ``edit_file`` or a ``bash`` command).

Cheap on large trees: the shadow index keeps git's stat cache, so a checkpoint lists only the
files that changed since the previous one (``git ls-files --modified --others``) and hashes only
those; a turn that changed nothing reuses the previous commit. A restore rewrites only the files
that differ and removes the ones that did not exist (``git read-tree --reset -u``, which never
follows a symlink out of the tree). Restoring first checkpoints the tree as it is, so every
rewind can itself be undone.

What is not kept: files the project's ``.gitignore`` files ignore, ``.git``, memagent's own
stores (``.transcripts/``, ``.memory/``, ``.tasks/``: they have their own history), nested git
repositories, and files larger than ``max_file_bytes`` (listed in each checkpoint as skipped).
When more than ``max_changed_files`` files changed since the previous checkpoint (a dependency
folder nobody ignored), no checkpoint is taken and the error says how many and what to do.

git runs through :func:`memagent.gitsafe.run_git` (a clean environment, no system or global
configuration, every program a configuration could name switched off), from inside the shadow
repository, never the project's; its configuration is written by memagent alone and turns
line-ending conversion, filters and ``ident`` off for every path (``info/attributes``), so a
restore is byte for byte whatever the project's ``.gitattributes`` say. Each session's
checkpoints form a chain of commits under ``refs/memagent/<session-id>``.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from memagent.fsutil import private_dir
from memagent.gitsafe import GitError, run_git

CHECKPOINTS_DIR = "checkpoints"
EXCLUDED = ("/.git", "/.transcripts/", "/.memory/", "/.tasks/")
# every path stored and restored as raw bytes, whatever the project's .gitattributes say
ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding -diff -merge\n"
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_CHANGED_FILES = 100_000  # more changed files than this in one turn: no checkpoint
GIT_TIMEOUT_SECONDS = 300.0
REF_PREFIX = "refs/memagent/"
_SESSION_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,80}$")
_CONFIG = (
    ("core.bare", "false"),
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.symlinks", "true"),
    ("core.fileMode", "true"),
    ("core.quotePath", "false"),
    ("core.untrackedCache", "true"),
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("gc.auto", "0"),
    ("gc.autoDetach", "false"),
    ("user.name", "memagent"),
    ("user.email", "checkpoints@memagent.invalid"),
)


class CheckpointError(Exception):
    """A checkpoint could not be taken or restored; ``str()`` is one line."""


@dataclass(frozen=True)
class Checkpoint:
    """One recorded state of the tree."""

    commit: str
    changed: int  # files added, changed or removed since the previous checkpoint of the project
    skipped: tuple[str, ...] = ()  # files larger than the limit, or nested repositories
    seconds: float = 0.0


@dataclass(frozen=True)
class Change:
    """A path that differs between two checkpoints: ``added``, ``modified`` or ``removed``."""

    status: str
    path: str


@dataclass(frozen=True)
class Restored:
    """What a restore did. ``before`` is a checkpoint of the tree just before it (to undo it)."""

    before: str
    target: str
    changes: tuple[Change, ...] = field(default_factory=tuple)

    @property
    def paths(self) -> list[str]:
        return [c.path for c in self.changes]


def project_key(root: Path) -> str:
    """The shadow repository's folder name: a hash of the project's resolved path (two
    checkouts of one repository have two work trees, so two shadow indexes)."""
    return hashlib.sha256(str(Path(root).resolve()).encode("utf-8")).hexdigest()[:16]


def shadow_dir(home: Path, root: Path) -> Path:
    return Path(home) / CHECKPOINTS_DIR / project_key(root)


def session_ref(session_id: str) -> str:
    if not _SESSION_REF.match(session_id) or ".." in session_id or session_id.endswith(".lock"):
        raise CheckpointError(f"not a session id: {session_id!r}")
    return REF_PREFIX + session_id


class ShadowRepo:
    """The shadow repository of one project (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        git_dir: Path,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_changed_files: int = DEFAULT_MAX_CHANGED_FILES,
    ) -> None:
        self.root = Path(root).resolve()
        self.git_dir = Path(git_dir)
        self.max_file_bytes = max_file_bytes
        self.max_changed_files = max_changed_files

    @classmethod
    def for_project(
        cls,
        home: Path,
        root: Path,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_changed_files: int = DEFAULT_MAX_CHANGED_FILES,
    ) -> ShadowRepo:
        return cls(root, shadow_dir(home, root), max_file_bytes=max_file_bytes, max_changed_files=max_changed_files)

    # ------------------------------------------------------------------ running git

    def _git(
        self, args: Sequence[str], *, timeout: float = GIT_TIMEOUT_SECONDS, check: bool = True, bare: bool = False
    ) -> str:
        """``git`` on the shadow repository with the project as its work tree (run from inside
        the shadow repository: paths are relative to the work tree's top); stdout."""
        where = [] if bare else [f"--git-dir={self.git_dir}", f"--work-tree={self.root}"]
        try:
            done = run_git(
                [*where, "-c", "safe.directory=*", *args],
                self.git_dir if not bare else self.git_dir.parent,
                timeout=timeout,
            )
        except GitError as exc:
            raise CheckpointError(str(exc)) from None
        if check and done.returncode != 0:
            message = done.stderr.strip().splitlines()
            raise CheckpointError(f"git {args[0]} failed: {message[-1] if message else f'exit {done.returncode}'}")
        return done.stdout

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer of the shadow index at a time (two sessions in one project)."""
        self._ensure()
        with open(self.git_dir / "memagent.lock", "a") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _ensure(self) -> None:
        if shutil.which("git") is None:
            raise CheckpointError("git is not installed, so checkpoints are off")
        if not self.root.is_dir():
            raise CheckpointError(f"{self.root} is not a directory")
        if (self.git_dir / "HEAD").is_file():
            return
        private_dir(self.git_dir)
        self._git(["init", "--quiet", "--bare", str(self.git_dir)], bare=True)
        for key, value in _CONFIG:
            self._git(["config", key, value])
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        (info / "exclude").write_text("\n".join(EXCLUDED) + "\n", encoding="utf-8")
        (info / "attributes").write_text(ATTRIBUTES, encoding="utf-8")
        (self.git_dir / "project").write_text(str(self.root) + "\n", encoding="utf-8")

    # ------------------------------------------------------------------ checkpoints

    def snapshot(self, session_id: str, message: str = "checkpoint") -> Checkpoint:
        """Record the tree now; a tree equal to the session's last checkpoint reuses it."""
        started = time.perf_counter()
        ref = session_ref(session_id)
        with self._locked():
            candidates = self._changed_paths()
            if len(candidates) > self.max_changed_files:
                raise CheckpointError(
                    f"{len(candidates):,} files changed since the last checkpoint, more than {self.max_changed_files:,}: "
                    "not recorded (add generated folders to .gitignore, or raise checkpoint_max_files)"
                )
            skipped = self._stage(candidates)
            tree = self._git(["write-tree"]).strip()
            parent = self._resolve(ref)
            if parent is not None and self._git(["rev-parse", f"{parent}^{{tree}}"]).strip() == tree:
                commit = parent
            else:
                commit = self._git(["commit-tree", tree, *(["-p", parent] if parent else []), "-m", message]).strip()
                self._git(["update-ref", ref, commit])
        return Checkpoint(commit, len(candidates), tuple(skipped), time.perf_counter() - started)

    def _changed_paths(self) -> list[str]:
        """Paths added, modified or removed since the shadow index was last written."""
        listing = self._git(["ls-files", "-z", "--others", "--modified", "--deleted", "--exclude-standard"])
        return list(dict.fromkeys(p for p in listing.split("\0") if p))

    def _stage(self, candidates: list[str]) -> list[str]:
        """Bring the shadow index up to the tree, leaving out what is too large or a nested
        repository; returns what was left out."""
        if not candidates:
            return []
        nested = [p for p in candidates if p.endswith("/")]
        large = [p for p in candidates if not p.endswith("/") and self._too_large(p)]
        if large:
            self._git(["update-index", "--force-remove", "--", *large])
        excludes = [f":(top,exclude,literal){p}" for p in (*nested, *large)]
        self._git(["add", "--all", "--", ":/", *excludes])
        return nested + large

    def _too_large(self, relative: str) -> bool:
        try:
            info = os.lstat(self.root / relative)
        except OSError:
            return False
        return info.st_size > self.max_file_bytes and not os.path.islink(self.root / relative)

    def _resolve(self, name: str) -> str | None:
        found = self._git(["rev-parse", "--verify", "--quiet", f"{name}^{{commit}}"], check=False).strip()
        return found or None

    def has(self, commit: str) -> bool:
        if not re.fullmatch(r"[0-9a-f]{40,64}", commit or "") or not (self.git_dir / "HEAD").is_file():
            return False
        return self._resolve(commit) is not None

    def changes(self, old: str, new: str) -> list[Change]:
        """What differs from checkpoint ``old`` to checkpoint ``new``."""
        raw = self._git(["diff-tree", "-r", "-z", "--no-renames", "--name-status", old, new]).split("\0")
        names = {"A": "added", "M": "modified", "D": "removed", "T": "modified"}
        return [Change(names.get(raw[i][:1], "modified"), raw[i + 1]) for i in range(0, len(raw) - 1, 2) if raw[i]]

    def restore(self, session_id: str, commit: str) -> Restored:
        """Put the tree back as checkpoint ``commit`` recorded it."""
        if not self.has(commit):
            raise CheckpointError(f"checkpoint {commit[:12]} is not in {self.git_dir}")
        before = self.snapshot(session_id, "before rewind").commit
        with self._locked():
            changes = self.changes(before, commit)
            self._git(["read-tree", "--reset", "-u", commit])
        return Restored(before, commit, tuple(changes))

    # ------------------------------------------------------------------ housekeeping

    def sessions(self) -> list[str]:
        if not (self.git_dir / "HEAD").is_file():
            return []
        listing = self._git(["for-each-ref", "--format=%(refname)", REF_PREFIX])
        return [line[len(REF_PREFIX) :] for line in listing.splitlines() if line.startswith(REF_PREFIX)]

    def prune(self, keep: set[str]) -> list[str]:
        """Drop the checkpoints of sessions not in ``keep`` and pack the rest; returns the
        sessions dropped."""
        dropped = [s for s in self.sessions() if s not in keep]
        with self._locked():
            for session_id in dropped:
                self._git(["update-ref", "-d", session_ref(session_id)], check=False)
            self._git(["gc", "--quiet", "--prune=now"], check=False)
        return dropped

    def disk_usage(self) -> int:
        """Bytes the shadow repository takes on disk."""
        total = 0
        for folder, _, files in os.walk(self.git_dir):
            for name in files:
                try:
                    total += os.lstat(os.path.join(folder, name)).st_size
                except OSError:
                    continue
        return total


__all__ = [
    "Change",
    "Checkpoint",
    "CheckpointError",
    "Restored",
    "ShadowRepo",
    "project_key",
    "session_ref",
    "shadow_dir",
]
