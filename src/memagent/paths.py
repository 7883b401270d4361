"""Where memagent's data lives, and the API credentials: light, so that commands that only
need paths (``memagent tasks``, ``--help``) never import the settings machinery.

The project root is the nearest folder, from the working directory up, that holds ``.git`` or
``.memagent.toml`` (as git finds its repository); ``-C DIR`` names it explicitly. User-level
data lives in ``$MEMAGENT_HOME`` (default ``~/.memagent``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_MARKERS = (".git", ".memagent.toml")
# ``$MEMAGENT_HOME/data-roots``: every project where a session kept a transcript, one absolute
# path a line, so the sandbox of every other project can hide that project's data.
DATA_ROOTS_FILE = "data-roots"


def memagent_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    raw = env.get("MEMAGENT_HOME")
    return Path(raw).expanduser() if raw else Path.home() / ".memagent"


@dataclass(frozen=True)
class ProjectPaths:
    """Where a project's data lives. Nothing is created until a writer needs it."""

    root: Path
    home: Path
    user_home: Path = field(default_factory=Path.home)  # the user's home (``~``): ``~/.claude`` lives there

    @property
    def claude_home(self) -> Path:
        """``~/.claude``: Claude Code's user-level folder (settings, CLAUDE.md, skills, commands)."""
        return self.user_home / ".claude"

    @property
    def tasks(self) -> Path:
        return self.root / ".tasks"

    @property
    def transcripts(self) -> Path:
        return self.root / ".transcripts"

    @property
    def memory(self) -> Path:
        return self.root / ".memory"

    @property
    def user_memory(self) -> Path:
        return self.home / "memory"

    @property
    def history_file(self) -> Path:
        """REPL input history, shared across sessions and projects."""
        return self.home / "history"

    @property
    def user_config(self) -> Path:
        return self.home / "config.toml"

    @property
    def project_config(self) -> Path:
        return self.root / ".memagent.toml"


def find_project_root(start: Path) -> Path:
    """The nearest folder from ``start`` up holding ``.git`` or ``.memagent.toml``; else ``start``."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return folder
    return start


def project_paths(root: str | Path | None = None, env: Mapping[str, str] | None = None) -> ProjectPaths:
    """Paths of the project at ``root`` (taken as given), or found from the working directory."""
    base = Path(root).expanduser().resolve() if root else find_project_root(Path.cwd())
    return ProjectPaths(root=base, home=memagent_home(env), user_home=user_home(env))


def user_home(env: Mapping[str, str] | None = None) -> Path:
    """The user's home folder: ``$HOME`` of ``env`` (this process's by default)."""
    env = os.environ if env is None else env
    raw = env.get("HOME")
    return Path(raw).expanduser() if raw else Path.home()


@dataclass(frozen=True)
class Credentials:
    api_key: str | None = None
    auth_token: str | None = None
    base_url: str | None = None

    @property
    def present(self) -> bool:
        return bool(self.api_key or self.auth_token)


def credentials_from_env(env: Mapping[str, str] | None = None) -> Credentials:
    env = os.environ if env is None else env
    return Credentials(
        api_key=env.get("ANTHROPIC_API_KEY") or None,
        auth_token=env.get("ANTHROPIC_AUTH_TOKEN") or None,
        base_url=env.get("ANTHROPIC_BASE_URL") or None,
    )


def child_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment handed to the user's child processes (hooks, MCP servers): ``env``, or
    this process's own. A copy, so a child's changes never reach us."""
    return dict(os.environ if env is None else env)


__all__ = [
    "Credentials",
    "PROJECT_MARKERS",
    "ProjectPaths",
    "child_environment",
    "credentials_from_env",
    "find_project_root",
    "memagent_home",
    "project_paths",
    "user_home",
]


def record_data_root(home: Path, root: Path) -> None:
    """Remember that ``root`` holds memagent's data (transcripts, private cards): the sandbox
    hides it from commands run in any other project. Best effort: never fails a session."""
    line = str(root.resolve())
    if "\n" in line or not home.is_dir():
        return
    if Path(line) in data_roots(home):
        return
    try:
        fd = os.open(home / DATA_ROOTS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    except OSError:
        return


def data_roots(home: Path) -> list[Path]:
    """The projects :func:`record_data_root` remembered (absolute paths only)."""
    try:
        text = (home / DATA_ROOTS_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [Path(line) for line in dict.fromkeys(text.splitlines()) if line.startswith("/")]
