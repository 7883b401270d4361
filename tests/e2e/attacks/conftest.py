"""Markers ``attack1`` … ``attack10``: ``pytest -m attack4 tests/e2e/attacks`` runs one class."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    for number in range(1, 11):
        config.addinivalue_line("markers", f"attack{number}: hostile-repository attacks of class {number}")
