"""What the REPL says around a session: the recap of a resumed one, and what was learned.

``memagent -c`` shows the last few exchanges of the session it continues and where it stopped,
so the user does not face a blank prompt. At exit, the REPL says what the session taught
long-term memory ("2 memories saved, 1 updated; review them with `memagent memory review`") and
which cards those are, each on a line of its own, shortened.
Pure functions over plain data, so they are tested without a terminal. The learner's reports come
from the memory room, which the front end does not import: they are read by attribute, with
checks, and a report without the expected parts counts for nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from memagent.llm import items
from memagent.ui.render import one_line
from memagent.ui.words import plural

if TYPE_CHECKING:
    from memagent.llm.types import Message

RECAP_EXCHANGES = 3
RECAP_CHARS = 160
LEARNED_SHOWN = 5
LEARNED_CHARS = 100
STORED = {"ADD": "+", "UPDATE": "~", "CONTRADICT": "~", "PENDING": "?"}


def _texts(message: Message) -> list[str]:
    return items.texts(message)


def _typed_text(message: Message) -> str:
    """What the user typed: the first text of their own (injected context left out)."""
    texts = [t for t in items.own_texts(message) if t.strip()]
    return texts[0] if texts else ""


def _tool_names(message: Message) -> list[str]:
    return [call.name for call in items.tool_uses(message.get("content"))]


def _is_typed(message: Message) -> bool:
    return message.get("role") == "user" and bool(_typed_text(message))


def recap_lines(messages: Sequence[Message], exchanges: int = RECAP_EXCHANGES) -> list[str]:
    """The last ``exchanges`` user turns with the answer each got, then where it stopped."""
    starts = [i for i, m in enumerate(messages) if _is_typed(m)]
    if not starts:
        return []
    lines: list[str] = []
    if len(starts) > exchanges:
        lines.append(f"… {plural(len(starts) - exchanges, 'earlier exchange')}")
    shown = starts[-exchanges:]
    for number, start in enumerate(shown):
        end = shown[number + 1] if number + 1 < len(shown) else len(messages)
        lines.append(f"you: {one_line(_typed_text(messages[start]), RECAP_CHARS)}")
        tools: list[str] = []
        answer = ""
        for message in messages[start + 1 : end]:
            if message.get("role") == "assistant":
                tools += _tool_names(message)
                answer = " ".join(t for t in _texts(message) if t.strip()) or answer
        if tools:
            lines.append(f"  ({plural(len(tools), 'tool call')}: {', '.join(dict.fromkeys(tools))})")
        if answer:
            lines.append(f"memagent: {one_line(answer, RECAP_CHARS)}")
    lines.append(stopped_where(messages))
    return lines


def stopped_where(messages: Sequence[Message]) -> str:
    if messages and messages[-1].get("role") == "assistant":
        if _tool_names(messages[-1]):
            return "It stopped while a tool call was running; say how to go on."
        return "It stopped after the answer above; carry on where you left off."
    return "It stopped before the last message got an answer; send it again or say how to go on."


def learned_counts(reports: Iterable[object]) -> dict[str, int]:
    """Totals over a learner's reports (each counts its decisions by action: ``count("ADD")``):
    saved (new cards), updated, contradicted, pending."""
    totals = {"saved": 0, "updated": 0, "pending": 0}
    for report in reports:
        count = getattr(report, "count", None)
        if not callable(count):
            continue

        def counted(action: str) -> int:
            found = count(action)
            return found if isinstance(found, int) else 0

        totals["saved"] += counted("ADD")
        totals["updated"] += counted("UPDATE") + counted("CONTRADICT")
        totals["pending"] += counted("PENDING")
    return totals


def learned_summary(counts: dict[str, int]) -> str | None:
    """``2 memories saved, 1 updated; review them with `memagent memory review``` (None: nothing)."""
    parts = []
    if counts.get("saved"):
        parts.append(f"{plural(counts['saved'], 'memory', 'memories')} saved")
    if counts.get("updated"):
        parts.append(f"{counts['updated']} updated")
    if counts.get("pending"):
        parts.append(f"{counts['pending']} waiting for your review")
    if not parts:
        return None
    return "Learned this session: " + ", ".join(parts) + "; review them with `memagent memory review`"


def learned_items(reports: Iterable[object], shown: int = LEARNED_SHOWN) -> list[str]:
    """One line per card the session wrote: ``  + <text, shortened> (decision m_3fa2c01d)``
    (``~`` an update or correction, ``?`` waiting for review); at most ``shown`` of them."""
    lines: list[str] = []
    for report in reports:
        for decision in getattr(report, "decisions", None) or ():
            mark = STORED.get(getattr(decision, "action", ""))
            card_id = getattr(decision, "card_id", None)
            candidate = getattr(decision, "candidate", None)
            if mark is None or not card_id or candidate is None:
                continue
            if getattr(decision, "pending", False):
                mark = STORED["PENDING"]
            kind = getattr(candidate, "memory_type", "") or "memory"
            content = str(getattr(candidate, "content", ""))
            lines.append(f"  {mark} {one_line(content, LEARNED_CHARS)} ({kind} {card_id})")
    if len(lines) > shown:
        lines = lines[:shown] + [f"  … and {len(lines) - shown} more (`memagent memory list`)"]
    return lines


__all__ = ["learned_counts", "learned_items", "learned_summary", "recap_lines", "stopped_where"]
