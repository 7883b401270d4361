"""The errors every memory module shares, and the one-line form of an exception."""

from __future__ import annotations


class MemoryUnavailable(Exception):
    """Memory cannot be used right now; ``str()`` is a one-line reason for the user."""


class StoreError(Exception):
    """A store (its files, catalog or vector index) cannot be used; ``str()`` is one line."""


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type name when it has none)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


__all__ = ["MemoryUnavailable", "StoreError", "one_line"]
