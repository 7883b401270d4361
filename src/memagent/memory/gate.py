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
from dataclasses import dataclass, field
from typing import Iterable

from memagent.memory.cards import MemoryCard
from memagent.memory.secrets import personal_data_kinds, secret_kinds


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
    """Counts automatic writes per session (in memory: a new process starts a new count)."""

    limit: int
    _counts: dict[str, int] = field(default_factory=dict)

    def refusal(self, session_id: str) -> str | None:
        if self._counts.get(session_id, 0) >= self.limit:
            return (
                f"rate limit: {self.limit} automatic memories already saved in this session; "
                "save only what matters most, or ask the user"
            )
        return None

    def record(self, session_id: str) -> None:
        self._counts[session_id] = self._counts.get(session_id, 0) + 1


__all__ = ["GateConfig", "RateLimiter", "check_card", "may_hold_personal_data", "term_overlap"]
