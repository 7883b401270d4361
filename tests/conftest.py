"""Suite-wide isolation: no test touches the real user dir, a real key or the network.

Two layers. Every test gets its own ``HOME``, ``MEMAGENT_HOME`` and XDG cache/config dirs under
pytest's temp dir (subprocesses inherit them), so a library that writes under ``~`` (ONNX
runtime telemetry, model caches, prompt history) writes there. And a session-wide guard
snapshots the real ``~/.memagent`` and ``~/.cache`` before the run and fails the run if
anything under them was created, changed or removed by the end.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["fakeapi.fixtures", "memory_fixtures", "cli_fixtures", "repl_kit"]

# Caches of package managers that may legitimately run next to the suite on a shared machine.
_FOREIGN_CACHES = frozenset({"pip", "uv", "pre-commit", "pypoetry", "hatch"})

_CREDENTIAL_AND_SETTING_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "MEMAGENT_MODEL",
    "MEMAGENT_SMALL_MODEL",
    "MEMAGENT_COMPACT_TOKENS",
    "MEMAGENT_CHROMA_URL",
    "MEMAGENT_EMBEDDER",
    "MEMAGENT_MAX_TOKENS",
    "MEMAGENT_COMPACTION_BACKGROUND",
    "MEMAGENT_MEMORY_TOOL",
)


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """``relative path → (size, mtime_ns)`` of every file under ``root`` (empty when absent)."""
    found: dict[str, tuple[int, int]] = {}
    if not root.is_dir():
        return found
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root and root.name == ".cache":
            dirnames[:] = [d for d in dirnames if d not in _FOREIGN_CACHES]
        for name in filenames:
            path = Path(dirpath) / name
            try:
                stat = path.lstat()
            except OSError:
                continue
            found[str(path.relative_to(root))] = (stat.st_size, stat.st_mtime_ns)
    return found


def describe_changes(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    changes = [f"created {p}" for p in sorted(after.keys() - before.keys())]
    changes += [f"removed {p}" for p in sorted(before.keys() - after.keys())]
    changes += [f"changed {p}" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]]
    return changes


def _watched(real_home: Path) -> list[Path]:
    watched = [real_home / ".memagent", real_home / ".cache"]
    xdg_cache = os.environ.get("XDG_CACHE_HOME")
    if xdg_cache:
        watched.append(Path(xdg_cache))
    return watched


@pytest.fixture(scope="session", autouse=True)
def real_home_untouched(tmp_path_factory):
    """Point HOME away from the real one for the whole run, and fail if the real one changed."""
    real_home = Path(os.path.expanduser("~")).resolve()
    watched = _watched(real_home)
    before = {root: snapshot(root) for root in watched}
    session_home = tmp_path_factory.mktemp("session-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(session_home))
        patch.setenv("MEMAGENT_HOME", str(session_home / ".memagent"))
        patch.setenv("XDG_CACHE_HOME", str(session_home / ".cache"))
        yield real_home
    changes = [f"{root}: {change}" for root in watched for change in describe_changes(before[root], snapshot(root))]
    if changes:
        pytest.fail("the test run wrote into the real home folder:\n  " + "\n  ".join(changes[:20]), pytrace=False)


def isolated_variables(home: Path, user_home: Path) -> dict[str, str]:
    """The variables every test runs with: ``home`` as MEMAGENT_HOME, ``user_home`` as HOME and
    the root of the XDG dirs, library telemetry off."""
    return {
        "HOME": str(user_home),
        "MEMAGENT_HOME": str(home),
        "XDG_CACHE_HOME": str(user_home / ".cache"),
        "XDG_CONFIG_HOME": str(user_home / ".config"),
        "XDG_DATA_HOME": str(user_home / ".local" / "share"),
        "ORT_DISABLE_TELEMETRY": "1",
        "ANONYMIZED_TELEMETRY": "False",
    }


def isolated_environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A copy of this process's environment as a test sees it, with homes of its own: for a
    subprocess that several tests share (a module-scoped fixture cannot use ``isolated_env``)."""
    env = {
        **os.environ,
        **isolated_variables(tmp_path_factory.mktemp("memagent-home"), tmp_path_factory.mktemp("home")),
    }
    for var in _CREDENTIAL_AND_SETTING_VARS:
        env.pop(var, None)
    return env


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory, monkeypatch, real_home_untouched):
    """Per test: HOME, MEMAGENT_HOME and XDG dirs in temp dirs, and no variable that could reach
    a real API or change the settings. Returns the MEMAGENT_HOME dir."""
    home = tmp_path_factory.mktemp("memagent-home")
    for name, value in isolated_variables(home, tmp_path_factory.mktemp("home")).items():
        monkeypatch.setenv(name, value)
    for var in _CREDENTIAL_AND_SETTING_VARS:
        monkeypatch.delenv(var, raising=False)
    return home
