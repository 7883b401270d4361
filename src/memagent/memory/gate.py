"""The write gate: what may become a memory card.

The checks here are pure: they look at a candidate card and return a refusal reason or ``None``.
The service runs them *before* anything is written, so a refused card never touches disk. The
near-duplicate decision needs the store and lives in the service; the thresholds live here.

Secrets are refused in every card. Personal data (e-mail addresses, phone numbers, payment card
numbers, IBANs) is refused in every card that can leave this machine (project cards in
``.memory/cards/``, which are committed) and in every card the user did not state themselves
(learned, imported, saved by a tool or an MCP client); only the user's own words, saved where
nobody else reads them (user scope, session scope or ``--private``), may keep it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memagent.memory.cards import MemoryCard
from memagent.memory.secrets import personal_data_kinds, secret_kinds

if TYPE_CHECKING:
    from memagent.memory.quota import WriteLedger


@dataclass(frozen=True)
class GateConfig:
    min_confidence: float = 0.7
    min_chars: int = 5
    max_chars: int = 2000
    # A new card at least this similar (cosine) to an active card is merged into it instead.
    duplicate_cosine: float = 0.85
    # Lexical-only mode (no vectors): share of term overlap (Jaccard) that counts as a duplicate.
    duplicate_overlap: float = 0.8
    # Automatic writes (background extraction) allowed per session; explicit saves are not limited.
    max_auto_writes_per_session: int = 20
    # Automatic writes allowed per day in the project, across processes (0: no daily limit).
    max_auto_writes_per_day: int = 0
    # Active cards a store may hold; past it the lowest-value are archived (0: no quota).
    max_cards: int = 0


def _card_texts(card: MemoryCard) -> Iterable[tuple[str, str]]:
    yield "content", card.content
    for name in ("backstory", "person", "relationship", "task_hint"):
        value = getattr(card, name)
        if value:
            yield name, value
    if card.provenance.quote:
        yield "quote", card.provenance.quote
    for path in card.files:
        yield "files", path


def may_hold_personal_data(card: MemoryCard, private: bool) -> bool:
    """Only the user's own words, kept where nobody else reads them (see the module docstring)."""
    return card.source == "user" and (private or card.scope in ("user", "session"))


def check_card(card: MemoryCard, config: GateConfig, *, private: bool = False) -> str | None:
    """The first reason to refuse ``card`` (length, confidence, secrets, personal data), or
    ``None``. ``private``: the card is kept out of git (``.memory/local/private/``).

    A refusal names the kind of secret or personal data and the field, never the value itself.
    """
    length = len(card.content)
    if length < config.min_chars:
        unit = "character" if length == 1 else "characters"
        return f"too short: {length} {unit} (minimum {config.min_chars}); say what is worth remembering"
    if length > config.max_chars:
        return (
            f"too long: {length} characters (maximum {config.max_chars}); "
            "save one short, self-contained fact per memory"
        )
    if card.confidence < config.min_confidence:
        return (
            f"confidence {card.confidence:.2f} is below the minimum {config.min_confidence:.2f}; "
            "only save what is known to be true"
        )
    personal_allowed = may_hold_personal_data(card, private)
    for field_name, text in _card_texts(card):
        where = "" if field_name == "content" else f" (in {field_name})"
        kinds = secret_kinds(text)
        if kinds:
            return (
                f"looks like it contains a secret: {', '.join(kinds)}{where}; "
                "memories must never hold credentials — save where the secret is kept, not the secret"
            )
        personal = [] if personal_allowed else personal_data_kinds(text)
        if personal:
            return (
                f"holds personal data: {', '.join(personal)}{where}; memories shared with the project or "
                "learned automatically must not keep personal data — save the fact without it "
                "(only your own words in a user-scope or --private card may keep it)"
            )
    return None


def term_overlap(a: Iterable[str], b: Iterable[str]) -> float:
    """Jaccard similarity of two term multisets (1.0 for identical term sets)."""
    ca, cb = Counter(a), Counter(b)
    union = sum((ca | cb).values())
    if not union:
        return 0.0
    return sum((ca & cb).values()) / union


@dataclass
class RateLimiter:
    """Counts automatic writes per session and per day.

    Without a ``ledger`` (a :class:`memory.quota.WriteLedger`) the counts live in this process;
    with one they are kept on disk, shared by every process of the project (each ``-p`` run is
    a new process but not a new allowance). ``per_day`` ≤ 0: no daily limit."""

    limit: int
    per_day: int = 0
    ledger: WriteLedger | None = None
    _counts: dict[str, int] = field(default_factory=dict)

    def _count(self, session_id: str) -> tuple[int, int]:
        if self.ledger is not None:
            return self.ledger.counts(session_id)
        return self._counts.get(session_id, 0), sum(self._counts.values())

    def refusal(self, session_id: str) -> str | None:
        session, today = self._count(session_id)
        if session >= self.limit:
            return (
                f"rate limit: {self.limit} automatic memories already saved in this session; "
                "save only what matters most, or ask the user"
            )
        if self.per_day > 0 and today >= self.per_day:
            return (
                f"rate limit: {self.per_day} automatic memories already saved today in this project; "
                "save only what matters most, or ask the user"
            )
        return None

    def record(self, session_id: str) -> None:
        if self.ledger is not None:
            self.ledger.add(session_id)
            return
        self._counts[session_id] = self._counts.get(session_id, 0) + 1


__all__ = ["GateConfig", "RateLimiter", "check_card", "may_hold_personal_data", "term_overlap"]
