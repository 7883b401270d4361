"""Memory hygiene over time: confidence decay, stale-file notes, and the review queue.

Decay
    A card that is never retrieved or cited slowly loses confidence: after a grace period
    (``GRACE_DAYS``) since its last use (or its creation, if never used), confidence halves
    every ``HALF_LIFE_DAYS`` (up to twice that for a card used often: ``memory.usage``), down
    to ``FLOOR``. Being injected into a turn or returned by a search the model asked for counts
    as use, like a citation. The value is always computed from the card's
    *base* confidence (what it had before the first decay, kept in the learning history), so
    applying decay twice changes nothing and a card that gets cited again climbs back.
    :func:`apply_decay` is run lazily (e.g. at session start), at most once a day, and changes
    at most ``MAX_DECAY_WRITES`` cards per run.

Stale files
    :func:`stale_note` says when a card is about files that no longer exist or changed since
    the card was last written; injection shows the note next to the card.

Review
    :func:`review_queue` lists the newest automatic cards (those the learning pipeline wrote,
    and any card whose source is not the user) for ``memagent memory review``, pending ones
    (``require_review``) first; :func:`approve`, :func:`amend` and :func:`reject` apply a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from memagent.jsontypes import JsonValue, json_str
from memagent.memory.cards import MemoryCard, to_utc, utc_now
from memagent.memory.learning_history import LearningHistory
from memagent.memory.usage import decay_stretch

if TYPE_CHECKING:
    from memagent.config import ProjectPaths
    from memagent.memory.saving import SaveResult
    from memagent.memory.service import MemoryService


GRACE_DAYS = 30.0
HALF_LIFE_DAYS = 180.0
FLOOR = 0.3
MIN_STEP = 0.02  # smaller changes are not written
MAX_DECAY_WRITES = 200
DECAY_EVERY = timedelta(days=1)
SCAN_LIMIT = 5000


def decayed_confidence(base: float, card: MemoryCard, now: datetime) -> float:
    """The confidence ``card`` should have now, starting from ``base``."""
    anchor = to_utc(card.last_used_at or card.created_at)
    idle_days = (to_utc(now) - anchor).total_seconds() / 86400.0 - GRACE_DAYS
    if idle_days <= 0:
        return base
    value = base * 0.5 ** (idle_days / (HALF_LIFE_DAYS * decay_stretch(card.access_count)))
    return round(max(min(base, FLOOR), value), 3)


@dataclass
class DecayChange:
    card_id: str
    before: float
    after: float


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _bases(history: LearningHistory) -> tuple[dict[str, float], datetime | None]:
    bases: dict[str, float] = {}
    last_run: datetime | None = None
    for record in history.records():
        base = record.get("base")
        if record.get("kind") == "decay" and record.get("card_id") and _is_number(base):
            bases.setdefault(str(record["card_id"]), float(base))
        elif record.get("kind") == "decay_run":
            try:
                last_run = datetime.fromisoformat(str(record.get("time")))
            except ValueError:
                continue
    return bases, last_run


def apply_decay(
    service: MemoryService,
    history: LearningHistory,
    now: datetime | None = None,
    *,
    force: bool = False,
    max_writes: int = MAX_DECAY_WRITES,
) -> list[DecayChange]:
    """Bring every active card's confidence in line with its idle time (see module docstring)."""
    now = to_utc(now or utc_now())
    bases, last_run = _bases(history)
    if not force and last_run is not None and now - to_utc(last_run) < DECAY_EVERY:
        return []
    cards = service.list(limit=SCAN_LIMIT)
    work: list[tuple[float, MemoryCard, float, float]] = []
    for card in cards:
        base = max(bases.get(card.id, card.confidence), card.confidence)  # a restatement raises it
        target = decayed_confidence(base, card, now)
        if abs(target - card.confidence) >= MIN_STEP:
            work.append((abs(target - card.confidence), card, base, target))
    work.sort(key=lambda item: -item[0])
    changes: list[DecayChange] = []
    for _, card, base, target in work[:max_writes]:
        if service.update_card(card.id, touch=False, confidence=target) is None:
            continue
        history.append({"kind": "decay", "card_id": card.id, "base": base, "confidence": target}, scope=card.scope)
        changes.append(DecayChange(card.id, card.confidence, target))
    if cards and (changes or history.project_file.parent.is_dir()):
        history.append({"kind": "decay_run", "changed": len(changes)})
    return changes


def stale_note(card: MemoryCard, root: Path | str) -> str | None:
    """``"stale: src/app.py no longer exists"`` / ``"… changed since 2026-11-20"``, or ``None``."""
    notes = []
    base = Path(root)
    written = to_utc(card.updated_at)
    for name in card.files:
        if any(ch in name for ch in "*?["):
            continue  # a pattern, not a file
        path = Path(name).expanduser()
        if not path.is_absolute():
            path = base / path
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            notes.append(f"{name} no longer exists")
            continue
        except OSError:
            continue
        if datetime.fromtimestamp(mtime, UTC) > written + timedelta(seconds=1):
            notes.append(f"{name} changed since {written.date().isoformat()}")
    return "stale: " + "; ".join(notes) if notes else None


# -- review ----------------------------------------------------------------------------------


@dataclass
class ReviewItem:
    card: MemoryCard
    pending: bool
    intended_action: str | None = None  # for a pending correction: UPDATE or CONTRADICT
    target_id: str | None = None


def review_queue(service: MemoryService, history: LearningHistory, limit: int = 20) -> list[ReviewItem]:
    """Pending cards first, then the newest active automatic cards not yet reviewed."""
    records = history.records()
    reviewed = {str(r["card_id"]) for r in records if r.get("kind") == "review" and r.get("card_id")}
    pending_records = {str(r["card_id"]): r for r in records if r.get("kind") == "pending" and r.get("card_id")}
    items: list[ReviewItem] = []
    seen: set[str] = set()
    for card_id, record in reversed(list(pending_records.items())):
        if card_id in reviewed:
            continue
        card = service.get(card_id)
        if card is None or card.status != "archived":
            continue
        items.append(
            ReviewItem(card, True, json_str(record.get("action")) or None, json_str(record.get("target_id")) or None)
        )
        seen.add(card_id)
    automatic = set(history.automatic_card_ids())
    for card in service.list(limit=SCAN_LIMIT):
        if len(items) >= limit:
            break
        if card.id in seen or card.id in reviewed:
            continue
        if card.id in automatic or card.source != "user":
            items.append(ReviewItem(card, False))
            seen.add(card.id)
    return items[:limit]


def _log_review(history: LearningHistory, card: MemoryCard, verdict: str, **extra: JsonValue) -> None:
    history.append({"kind": "review", "card_id": card.id, "verdict": verdict, **extra}, scope=card.scope)


def approve(service: MemoryService, history: LearningHistory, item: ReviewItem) -> MemoryCard | None:
    """Keep a card: a pending one becomes active and, if it was a correction, replaces its target."""
    card = item.card
    if item.pending:
        card = service.update_card(card.id, status="active") or card
        target = service.get(item.target_id) if item.target_id else None
        if target is not None and target.active:
            status = "contradicted" if item.intended_action == "CONTRADICT" else "superseded"
            service.update_card(target.id, status=status, superseded_by=card.id)
            card = service.update_card(card.id, supersedes=target.id) or card
    _log_review(history, card, "keep")
    return card


def amend(service: MemoryService, history: LearningHistory, item: ReviewItem, new_content: str) -> SaveResult:
    """Edit a card: a pending one is activated first, then corrected by a superseding card."""
    if item.pending:
        approve(service, history, item)
    result = service.correct(item.card.id, new_content, source="user")
    _log_review(history, item.card, "edit", new_card_id=result.card.id if result.card else None, status=result.status)
    return result


def reject(
    service: MemoryService, history: LearningHistory, item: ReviewItem, paths: ProjectPaths | None = None
) -> int:
    """Forget a card (erased everywhere, its history text included)."""
    erased = service.forget([item.card.id])
    _log_review(history, item.card, "forget")
    history.erase([item.card.id])
    if paths is not None:
        from memagent.memory.profiles import invalidate_profiles

        invalidate_profiles(paths)
    return erased


def stale_cards(service: MemoryService, root: Path | str, limit: int = SCAN_LIMIT) -> list[tuple[MemoryCard, str]]:
    """Active cards with a stale note (for review and doctor-style listings)."""
    out = []
    for card in service.list(limit=limit):
        if card.files:
            note = stale_note(card, root)
            if note:
                out.append((card, note))
    return out


def ids_of(items: Sequence[ReviewItem]) -> list[str]:
    return [item.card.id for item in items]


__all__ = [
    "DecayChange",
    "FLOOR",
    "GRACE_DAYS",
    "HALF_LIFE_DAYS",
    "ReviewItem",
    "amend",
    "apply_decay",
    "approve",
    "decayed_confidence",
    "ids_of",
    "reject",
    "review_queue",
    "stale_cards",
    "stale_note",
]
