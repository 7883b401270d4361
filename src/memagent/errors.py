"""One-line error text: every room reports failures to the user as a single readable line."""

from __future__ import annotations

MESSAGE_LIMIT = 300


def one_line(problem: BaseException | str, limit: int = MESSAGE_LIMIT) -> str:
    """The first meaningful line of an exception (or a text), whitespace-collapsed and capped.

    An exception with no message is named by its type, so the line is never empty."""
    text = str(problem).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    first = " ".join(lines[0].split()) if lines else ""
    if not first:
        first = type(problem).__name__ if isinstance(problem, BaseException) else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


__all__ = ["MESSAGE_LIMIT", "one_line"]
