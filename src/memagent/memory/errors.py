"""The errors every memory module shares."""

from __future__ import annotations


class MemoryUnavailable(Exception):
    """Memory cannot be used right now; ``str()`` is a one-line reason for the user."""


class StoreError(Exception):
    """A store (its files, catalog or vector index) cannot be used; ``str()`` is one line."""


class StoreBusy(StoreError):
    """Another process held the store's lock longer than the caller would wait."""


__all__ = ["MemoryUnavailable", "StoreBusy", "StoreError"]
