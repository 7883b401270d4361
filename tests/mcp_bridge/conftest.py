"""Fixtures for the MCP tests (helpers live in ``tests/mcp_kit.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mcp_kit import run_http_toy


@pytest.fixture(scope="module")
def http_toy() -> Iterator[str]:
    """A streamable-HTTP toy server; yields its URL."""
    yield from run_http_toy()
