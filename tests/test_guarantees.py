"""The guarantees kept by tools, run as part of the suite: ruff's lint and format over the source,
the tests and the benches, and mypy --strict over the core rooms (configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("src", "tests", "bench")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing_to_lint():
    done = _run("ruff", "check", "--no-cache", *TREES)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_the_code_is_formatted_as_ruff_formats_it():
    done = _run("ruff", "format", "--check", "--no-cache", *TREES)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_the_core_rooms_type_check_strictly():
    done = _run("mypy", "--cache-dir", "/dev/null")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
