"""Small wording helpers shared by the terminal renderers and the CLI."""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 line``, ``2 lines``, ``0 lines``; ``many`` for irregular plurals (``memories``)."""
    word = noun if count == 1 else (many or noun + "s")
    return f"{count:,} {word}"


__all__ = ["plural"]
