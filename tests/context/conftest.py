"""Fixtures for the context tests; the harness itself lives in ctx_harness.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from context.ctx_harness import Harness, new_harness


@pytest.fixture
def make_session(tmp_path: Path) -> Iterator[Callable[..., Harness]]:
    """``make_session(brain, threshold=..., **harness_options)``; transcripts closed at teardown."""
    made: list[Harness] = []

    def make(brain: Any, **kwargs: Any) -> Harness:
        harness = new_harness(tmp_path, brain, **kwargs)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        harness.writer.close()
