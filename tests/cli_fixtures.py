"""Shared fixtures: a project folder, and the real ``memagent`` CLI run in a subprocess (against
the loopback fake Anthropic API when a test gives it ``ANTHROPIC_BASE_URL``).

The subprocess is forked by the worker's warm starter (``warm_cli.py``: a process of its own,
the SDK already imported) whenever it can be, and started cold otherwise. Its MEMAGENT_HOME
starts as a user's home after their first memory run: the embedding graphs that run builds and
caches in ``MEMAGENT_HOME/cache`` (``embedder_cache_seed``) are there — building them again in
every test's new home cost each such test 5–25 s, most of it writing 120 MB durably. The first
run in an empty home is tested where it is the subject (the embedder's own tests)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from warm_cli import WarmStarters

FAKE_KEY = "test-key"


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def _shared_temp_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temp folder of this whole test run: shared by the xdist workers, gone with the run."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _build_embedder_cache(seed: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """What ``MEMAGENT_HOME/cache`` holds after a first memory run: ``doctor`` loads the embedder
    in a new home; its cache folder becomes the seed."""
    from conftest import isolated_environment

    env = isolated_environment(tmp_path_factory)
    project = tmp_path_factory.mktemp("seed-project")
    subprocess.run(
        [sys.executable, "-m", "memagent", "-C", str(project), "doctor", "--json"],
        env=env,
        capture_output=True,
        timeout=600,
        check=False,
    )
    built = Path(env["MEMAGENT_HOME"]) / "cache"
    staging = seed.with_name(seed.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    for item in built.iterdir() if built.is_dir() else ():
        if item.is_file() and item.name.startswith("minilm-"):
            shutil.copy2(item, staging / item.name)
    staging.rename(seed)


@pytest.fixture(scope="session")
def embedder_cache_seed(tmp_path_factory) -> list[Path]:
    """The cached embedding graphs (and the record of the verified weights) of a first memory
    run, built once for all the workers of this test run; empty when it could not be built."""
    root = _shared_temp_root(tmp_path_factory)
    seed = root / "embedder-cache-seed"
    with (root / "embedder-cache-seed.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not seed.is_dir():
            _build_embedder_cache(seed, tmp_path_factory)
    return sorted(seed.iterdir())


def seed_embedder_cache(memagent_home: Path, seed: list[Path]) -> None:
    """Put the seed's files in ``memagent_home/cache`` as hard links (a product write replaces a
    cache file atomically, so a test never changes the seed), copies where links cannot be."""
    cache = memagent_home / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    for item in seed:
        target = cache / item.name
        if target.exists():
            continue
        try:
            os.link(item, target)
        except OSError:
            shutil.copy2(item, target)


@pytest.fixture
def cli_env(isolated_env, embedder_cache_seed) -> dict[str, str]:
    """The environment of the child: the suite's temp MEMAGENT_HOME (its embedding graphs already
    cached), no real credentials."""
    seed_embedder_cache(isolated_env, embedder_cache_seed)
    env = dict(os.environ)
    env["ANTHROPIC_API_KEY"] = FAKE_KEY
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("NO_COLOR", None)
    return env


@pytest.fixture(scope="session")
def warm_starters(tmp_path_factory) -> Iterator[WarmStarters]:
    """This worker's warm starters of the CLI (one per set of interpreter start-up variables)."""
    starters = WarmStarters(tmp_path_factory.mktemp("warm-starters"))
    yield starters
    starters.close()


def run_cold(
    args: list[str], env: dict[str, str], input: str = "", *, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess:
    """``python -m memagent ARGS`` in a new interpreter (what a warm starter stands in for)."""
    return subprocess.run(
        [sys.executable, "-m", "memagent", *args],
        env=env,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


def cli_runner(
    base_env: dict[str, str], starters: WarmStarters | None = None
) -> Callable[..., subprocess.CompletedProcess]:
    """``run(*args, env=..., input=..., timeout=...)``: the real CLI in a subprocess with
    ``base_env`` (updated by ``env``), forked by ``starters`` when they can."""

    def run(*args: str, env: dict[str, str] | None = None, input: str | None = None, timeout: float = 60):
        full_env = {**base_env, **(env or {})}
        text_in = input if input is not None else ""
        warm = starters.run(list(args), full_env, text_in, timeout) if starters is not None else None
        if warm is not None:
            return warm
        return run_cold(list(args), full_env, text_in, timeout=timeout)

    return run


@pytest.fixture
def run_cli(cli_env, warm_starters) -> Callable[..., subprocess.CompletedProcess]:
    return cli_runner(cli_env, warm_starters)


@pytest.fixture(scope="module")
def module_cli(tmp_path_factory, warm_starters, embedder_cache_seed) -> Callable[..., subprocess.CompletedProcess]:
    """``run_cli`` for a run that several tests of a module share (one scenario run once, each
    test asserting its own part): homes of its own, the same variables as a test's."""
    from conftest import isolated_environment

    env = isolated_environment(tmp_path_factory)
    seed_embedder_cache(Path(env["MEMAGENT_HOME"]), embedder_cache_seed)
    env["ANTHROPIC_API_KEY"] = FAKE_KEY
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("NO_COLOR", None)
    return cli_runner(env, warm_starters)
