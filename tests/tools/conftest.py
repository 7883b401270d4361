"""Fixtures for the built-in tools: a throw-away project root and a registry to call through."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memagent.tools.base import ToolContext, ToolOutcome, ToolRegistry
from memagent.tools.builtin import builtin_tools


@pytest.fixture
def ctx(project: Path) -> ToolContext:
    return ToolContext(root=project, session_id="s1", bash_timeout=20.0)


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry.of(builtin_tools())


@pytest.fixture
def call(registry: ToolRegistry, ctx: ToolContext) -> Callable[..., ToolOutcome]:
    """``call("read_file", path="x")`` runs a tool through the registry like the loop does."""

    def run(name: str, **raw: Any) -> ToolOutcome:
        return registry.run(name, raw, ctx)

    return run
