"""Fixtures for the memory store/service tests (the embedder and services come from
``tests/memory_fixtures.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def lexical_embedder():
    from memagent.memory.embeddings import LexicalOnlyEmbedder

    return LexicalOnlyEmbedder()


def _files_containing(needle: bytes, *dirs: Path) -> list[Path]:
    """Every file under ``dirs`` whose raw bytes contain ``needle`` (case-insensitively for ASCII)."""
    hits = []
    lowered = needle.lower()
    for directory in dirs:
        if not directory.exists():
            continue
        for path in directory.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                if needle in data or lowered in data.lower():
                    hits.append(path)
    return hits


@pytest.fixture
def files_containing():
    """``files_containing(needle, *dirs)``: a raw byte search over every file under ``dirs``."""
    return _files_containing
