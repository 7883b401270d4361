"""Settings and paths.

Precedence, lowest to highest: built-in defaults < config file < environment < command-line flags.

Config files are TOML: ``$MEMAGENT_HOME/config.toml`` (user) then ``<project>/.memagent.toml``
(project), the project file winning. Keys are the field names of :class:`Settings`.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

# A current Claude Sonnet id; checked against the installed SDK's model list in tests.
DEFAULT_MODEL = "claude-sonnet-5-5"
# A cheaper model for summaries and memory extraction.
DEFAULT_SMALL_MODEL = "claude-haiku-4-5"

# Context windows by model-name prefix; anything unknown gets the conservative default.
CONTEXT_WINDOWS = {
    "claude-": 200_000,
}
DEFAULT_CONTEXT_WINDOW = 200_000


class ConfigError(Exception):
    """A config file or value the user must fix; shown as one line."""


@dataclass(frozen=True)
class Settings:
    model: str = DEFAULT_MODEL
    small_model: str = DEFAULT_SMALL_MODEL
    max_tokens: int = 8192
    compact_tokens: int | None = None  # None: derived from the model's context window
    keep_tool_results: int = 3  # micro-compaction keeps the newest N tool results verbatim
    micro_compact_batch: int = 12  # elide old results in batches of this size (cache-friendly; see BENCHMARKS.md)
    bash_timeout: float = 120.0
    output_cap_chars: int = 30_000
    auto_approve: bool = False
    memory_enabled: bool = True
    extract_every_turns: int = 10
    require_review: bool = False  # automatic memory cards wait for `memagent memory review`
    chroma_url: str | None = None

    @property
    def context_window(self) -> int:
        for prefix, size in CONTEXT_WINDOWS.items():
            if self.model.startswith(prefix):
                return size
        return DEFAULT_CONTEXT_WINDOW

    @property
    def compaction_threshold(self) -> int:
        """Tokens at which auto-compaction starts: explicit, else a quarter of the window."""
        if self.compact_tokens:
            return self.compact_tokens
        return min(self.context_window // 4, 50_000)


ENV_KEYS = {
    "MEMAGENT_MODEL": "model",
    "MEMAGENT_SMALL_MODEL": "small_model",
    "MEMAGENT_COMPACT_TOKENS": "compact_tokens",
    "MEMAGENT_CHROMA_URL": "chroma_url",
    "MEMAGENT_MAX_TOKENS": "max_tokens",
}


def memagent_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    raw = env.get("MEMAGENT_HOME")
    return Path(raw).expanduser() if raw else Path.home() / ".memagent"


@dataclass(frozen=True)
class ProjectPaths:
    """Where a project's data lives. Nothing is created until a writer needs it."""

    root: Path
    home: Path

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


def project_paths(root: str | Path | None = None, env: Mapping[str, str] | None = None) -> ProjectPaths:
    base = Path(root).expanduser() if root else Path.cwd()
    return ProjectPaths(root=base.resolve(), home=memagent_home(env))


def _coerce(name: str, value: Any) -> Any:
    kinds = {f.name: f.type for f in fields(Settings)}
    if name not in kinds:
        raise ConfigError(f"unknown setting {name!r}")
    kind = str(kinds[name])
    try:
        if "bool" in kind:
            if isinstance(value, str):
                return value.strip().lower() in {"1", "true", "yes", "on"}
            return bool(value)
        if "int" in kind:
            return None if value in ("", None) else int(value)
        if "float" in kind:
            return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"setting {name!r}: {value!r} is not a valid {kind}") from None
    return None if value == "" else value


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None


def load_settings(
    paths: ProjectPaths,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for path in (paths.user_config, paths.project_config):
        for key, value in _read_toml(path).items():
            values[key] = _coerce(key, value)
    for env_key, name in ENV_KEYS.items():
        if env.get(env_key):
            values[name] = _coerce(name, env[env_key])
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = _coerce(key, value)
    return replace(Settings(), **values)


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


__all__ = [
    "ConfigError",
    "Credentials",
    "ProjectPaths",
    "Settings",
    "credentials_from_env",
    "load_settings",
    "memagent_home",
    "project_paths",
    "field",
]
