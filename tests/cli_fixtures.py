"""Shared fixtures: a project folder, and the real ``memagent`` CLI run in a subprocess (against
the loopback fake Anthropic API when a test gives it ``ANTHROPIC_BASE_URL``).

The subprocess is forked by the worker's warm starter (``warm_cli.py``: a process of its own,
the SDK already imported) whenever it can be, and started cold otherwise."""

from __future__ import annotations

import os
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


@pytest.fixture
def cli_env(isolated_env) -> dict[str, str]:
    """The environment of the child: the suite's temp MEMAGENT_HOME, no real credentials."""
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
        return subprocess.run(
            [sys.executable, "-m", "memagent", *args],
            env=full_env,
            input=text_in,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


@pytest.fixture
def run_cli(cli_env, warm_starters) -> Callable[..., subprocess.CompletedProcess]:
    return cli_runner(cli_env, warm_starters)


@pytest.fixture(scope="module")
def module_cli(tmp_path_factory, warm_starters) -> Callable[..., subprocess.CompletedProcess]:
    """``run_cli`` for a run that several tests of a module share (one scenario run once, each
    test asserting its own part): homes of its own, the same variables as a test's."""
    from conftest import isolated_environment

    env = isolated_environment(tmp_path_factory)
    env["ANTHROPIC_API_KEY"] = FAKE_KEY
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("NO_COLOR", None)
    return cli_runner(env, warm_starters)
