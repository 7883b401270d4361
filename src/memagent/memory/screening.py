"""Screening what extraction proposed: each candidate is traced to the message its quote comes
from, must be supported by that quote, and gets its source, scope and trust from that message's
author — what a file or a command's output taught never becomes a trusted user memory."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from pydantic import ValidationError

from memagent.jsontypes import JsonMapping, JsonObject
from memagent.memory.cards import MemoryCard, MemoryType, Provenance, Scope, Source
from memagent.memory.extraction import (
    MIN_SUPPORT,
    QUOTE_CHARS,
    TOOL_CONFIDENCE,
    WORD_RE,
    ExtractedMemory,
    RenderedSlice,
    Segment,
    looks_like_directive,
    looks_like_instruction,
    render_messages,
)

# -- from answer items to candidates ----------------------------------------------------------


@dataclass
class Candidate:
    """A memory proposed by extraction, traced to its origin: the card it would be, and where it
    was said. The same card is judged by consolidation, held for review and written by saving
    (``Saving.submit``); only the session and task it was learned under are added on the way."""

    card: MemoryCard
    quote: str
    message_id: str | None = None
    hold: bool = False  # held for review whatever the setting (instruction-like tool output)

    @property
    def content(self) -> str:
        return self.card.content

    @property
    def memory_type(self) -> MemoryType:
        return self.card.memory_type

    @property
    def scope(self) -> Scope:
        return self.card.scope

    @property
    def source(self) -> Source:
        return self.card.source

    @property
    def confidence(self) -> float:
        return self.card.confidence

    @property
    def importance(self) -> float:
        return self.card.importance

    @property
    def files(self) -> list[str]:
        return self.card.files

    @property
    def person(self) -> str | None:
        return self.card.person

    @property
    def backstory(self) -> str | None:
        return self.card.backstory

    @property
    def turn(self) -> int | None:
        return int(self.message_id) if self.message_id and self.message_id.isdigit() else None

    def provenance(self, session_id: str) -> Provenance:
        return Provenance(
            session_id=session_id or None,
            turn=self.turn,
            message_id=self.message_id,
            quote=self.quote[:QUOTE_CHARS] if self.quote else None,
        )

    def card_for(self, session_id: str, task_hint: str | None = None, supersedes: str | None = None) -> MemoryCard:
        """The card as it is saved from a session: its provenance, the task it was learned under,
        and the card it corrects."""
        return self.card.model_copy(
            update={"provenance": self.provenance(session_id), "task_hint": task_hint, "supersedes": supersedes}
        )


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().strip("\"'`“”‘’.…").lower()


def words(text: str) -> list[str]:
    return [w.lower().strip(".") for w in WORD_RE.findall(text or "")]


def containment(part: Iterable[str], whole: Iterable[str]) -> float:
    """Share of the distinct words of ``part`` found in ``whole``."""
    a, b = set(part), set(whole)
    return len(a & b) / len(a) if a else 0.0


def trace_quote(quote: str, segments: Sequence[Segment]) -> list[Segment]:
    """The segments a quote occurs in verbatim (white space and case aside); empty when the
    quote is too short to mean anything or occurs nowhere."""
    needle = _normal(quote)
    if len(needle) < 3:
        return []
    return [s for s in segments if needle in _normal(s.text)]


def support(content: str, evidence: str) -> float:
    """Share of the card's index terms (memagent's tokenizer: stopwords out, light stemming;
    framing words such as "user" or "project" left out) that occur in ``evidence``."""
    from memagent.memory.lexical import tokenize

    terms = set(tokenize(content)) - _FRAMING_TERMS
    return len(terms & set(tokenize(evidence))) / len(terms) if terms else 0.0


# Words a self-contained card adds around what was said ("The user prefers…", "The project uses…").
_FRAMING_TERMS = frozenset("user project repository repo codebase team developer prefer want use".split())


_PATH_RE = re.compile(
    r"(?<![\w@:/.-])(?:\.?[\w-]+/)+[\w.-]*[\w-]|(?<![\w@:/.-])[\w-]+\.(?:py|pyi|ts|tsx|js|jsx|mjs|go|rs|rb|java|kt|c|h|cc|cpp|"
    r"hpp|cs|swift|toml|ya?ml|json|jsonc|ini|cfg|md|rst|txt|sql|sh|lock|env|proto|tf|html|css|scss|vue|svelte)\b"
)


def mentioned_paths(*texts: str) -> list[str]:
    """Repository-looking paths in ``texts`` (``src/app/main.py``, ``db/migrations/``,
    ``pyproject.toml``), in order, without URLs or duplicates."""
    found: list[str] = []
    for text in texts:
        for match in _PATH_RE.finditer(text or ""):
            path = match.group(0).rstrip(".")
            if "://" in path or path.startswith("//") or path in found:
                continue
            found.append(path)
    return found


_RELATIVE_DAYS = {"today": 0, "tonight": 0, "this morning": 0, "this afternoon": 0, "yesterday": -1, "tomorrow": 1}
_RELATIVE_RE = re.compile(r"\b(today|tonight|this morning|this afternoon|yesterday|tomorrow)\b(?!['’])", re.I)


def resolve_relative_dates(text: str, session_date: date) -> str:
    """Replace the relative day words a model left in a memory with the absolute date."""

    def absolute(match: re.Match[str]) -> str:
        day = session_date + timedelta(days=_RELATIVE_DAYS[match.group(1).lower()])
        return f"on {day.isoformat()}"

    resolved = _RELATIVE_RE.sub(absolute, text)
    return re.sub(r"\bon on\b", "on", resolved)


@dataclass(frozen=True)
class UserQuote:
    """Where the user said it: the message a quote was traced to, for ``source: user``."""

    message_id: str
    quote: str

    @property
    def turn(self) -> int | None:
        return int(self.message_id) if self.message_id.isdigit() else None

    def provenance(self, session_id: str | None) -> JsonObject:
        prov: JsonObject = {"message_id": self.message_id, "quote": self.quote[:QUOTE_CHARS]}
        if session_id:
            prov["session_id"] = session_id
        if self.turn is not None:
            prov["turn"] = self.turn
        return prov


def trace_user_quote(quote: str, content: str, messages: Sequence[JsonMapping], ids: Sequence[str]) -> UserQuote | None:
    """The user's own message that holds ``quote`` verbatim and backs ``content`` (the newest
    such message), or ``None``. Text memagent injected (the hand-over, memory blocks, summaries,
    attachments) is not the user's words, so a quote found only there traces to nothing."""
    if not quote or not quote.strip():
        return None
    segments = [s for s in render_messages(messages, ids).segments if s.origin == "user"]
    found = [
        s
        for s in trace_quote(quote, segments)
        if support(content, quote) >= MIN_SUPPORT or support(content, s.text) >= MIN_SUPPORT
    ]
    if not found:
        return None
    return UserQuote(found[-1].message_id, " ".join(quote.split())[:QUOTE_CHARS])


@dataclass
class Screening:
    candidates: list[Candidate]
    dropped: list[tuple[str, str]]  # (content, reason)


def injection_lines(segments: Sequence[Segment]) -> list[str]:
    """Lines of tool output that read like instructions to the agent."""
    found = []
    for segment in segments:
        if segment.origin != "tool":
            continue
        for line in segment.text.splitlines():
            if looks_like_instruction(line):
                found.append(line.strip())
    return found


def screen(items: Sequence[ExtractedMemory], rendered: RenderedSlice, session_date: date) -> Screening:
    """Trace each item to the message its quote comes from, drop what its quote does not back
    up, and cap what comes from tool output (see the module docstring)."""
    planted = injection_lines(rendered.segments)
    kept: list[Candidate] = []
    dropped: list[tuple[str, str]] = []
    seen: set[str] = set()
    for item in items:
        origin, reason = _origin(item, rendered.segments)
        if origin is None:
            dropped.append((item.content, reason))
            continue
        from_tool = origin.origin == "tool"
        if from_tool and (looks_like_instruction(item.quote) or looks_like_instruction(item.content)):
            dropped.append((item.content, "instruction inside tool output"))
            continue
        if origin.origin != "user" and _restates(item.content, planted):
            dropped.append((item.content, "restates an instruction found in tool output"))
            continue
        key = _normal(item.content)
        if key in seen:
            dropped.append((item.content, "repeated in the same extraction"))
            continue
        seen.add(key)
        candidate = _candidate(item, origin, session_date)
        if candidate is None:
            dropped.append((item.content, "not a valid memory"))
            continue
        if from_tool and (looks_like_directive(item.quote) or looks_like_directive(item.content)):
            candidate.hold = True
        kept.append(candidate)
    return Screening(kept, dropped)


def _origin(item: ExtractedMemory, segments: Sequence[Segment]) -> tuple[Segment | None, str]:
    """The most trusted segment that holds the quote verbatim and supports the card, or None
    and why not."""
    if not item.quote.strip():
        return None, "no quote to trace it to"
    found = trace_quote(item.quote, segments)
    if not found:
        return None, "its quote is not in the messages it was learned from"
    priority = {"user": 0, "assistant": 1, "tool": 2}
    backed = [
        s
        for s in found
        if support(item.content, item.quote) >= MIN_SUPPORT or support(item.content, s.text) >= MIN_SUPPORT
    ]
    if not backed:
        return None, "its quote does not support it"
    return min(backed, key=lambda s: priority.get(s.origin, 3)), ""


def _as_tool_claim(candidate: Candidate) -> Candidate:
    """What tool output may plant: project scope at most, source ``tool``, capped confidence."""
    card = candidate.card
    scope = "project" if card.scope == "user" else card.scope
    candidate.card = card.model_copy(
        update={"source": "tool", "scope": scope, "confidence": min(card.confidence, TOOL_CONFIDENCE)}
    )
    return candidate


STOPWORDS = frozenset(
    "a an the of this that these those is are was were be been it its to in on at for by with and or as "
    "all any our we you your they their there here project repo repository".split()
)


def _restates(content: str, planted: Sequence[str]) -> bool:
    content_words = [w for w in words(content) if w not in STOPWORDS]
    if not content_words:
        return False
    return any(containment(content_words, words(line)) >= 0.5 for line in planted)


def _candidate(item: ExtractedMemory, origin: Segment, session_date: date) -> Candidate | None:
    """The candidate an answer item makes, or ``None`` when it is no valid card."""
    content = resolve_relative_dates(item.content, session_date)
    files = list(item.files)
    files += [p for p in mentioned_paths(content, item.quote) if p not in files]
    try:
        card = MemoryCard(
            content=content,
            memory_type=item.memory_type,
            scope=item.scope,
            source=origin.origin,
            confidence=round(item.confidence, 3),
            importance=item.importance,
            files=files[:10],
            person=item.person,
            backstory=resolve_relative_dates(item.backstory, session_date) if item.backstory else None,
        )
    except ValidationError:
        return None
    candidate = Candidate(card, quote=item.quote, message_id=origin.message_id)
    return _as_tool_claim(candidate) if origin.origin == "tool" else candidate


__all__ = [
    "Candidate",
    "Screening",
    "UserQuote",
    "trace_user_quote",
    "words",
    "containment",
    "trace_quote",
    "support",
    "mentioned_paths",
    "resolve_relative_dates",
    "injection_lines",
    "screen",
]
