"""Memory cards: the validated model, and its flat record form (for import/export and old stores).

A card lives in its own Markdown file (see ``memory.cardfiles``). The flat record form (content +
scalar metadata; lists and dicts JSON-encoded, absent fields left out) is how stores written by
earlier memagent versions held cards in Chroma; it is read when such a store is migrated.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

MemoryType = Literal["preference", "fact", "skill", "habit", "event", "context", "constraint", "decision", "procedure"]
Scope = Literal["user", "project", "session"]
# "import": brought in by ``memagent memory import``; "repository": a card file this machine did
# not write (team knowledge, see ``memory.provenance``)
Source = Literal["user", "assistant", "tool", "system", "import", "repository"]
Status = Literal["active", "superseded", "contradicted", "archived"]

MEMORY_TYPES: tuple[str, ...] = get_args(MemoryType)
SCOPES: tuple[str, ...] = get_args(Scope)
SOURCES: tuple[str, ...] = get_args(Source)
STATUSES: tuple[str, ...] = get_args(Status)

CARD_ID_PATTERN = r"^m_[0-9a-f]{12}$"
CARD_ID_RE = re.compile(CARD_ID_PATTERN)
MAX_CONTENT_CHARS = 20_000  # a hard sanity bound; the write gate's limit is much lower
MAX_QUOTE_CHARS = 300

# Metadata keys holding JSON-encoded values, and those holding ISO timestamps.
_JSON_KEYS = ("provenance", "files", "merged_from", "members")
_TIME_KEYS = ("created_at", "updated_at", "last_used_at")


def new_card_id() -> str:
    """``m_`` + 12 random hex digits (48 bits: collisions are negligible at any realistic size)."""
    return "m_" + secrets.token_hex(6)


def utc_now() -> datetime:
    return datetime.now(UTC)


def to_utc(value: datetime) -> datetime:
    """Naive datetimes are taken to be UTC; aware ones are converted."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def iso_utc(value: datetime) -> str:
    """``2026-11-20T10:04:05.123456Z`` — sortable as a string."""
    return to_utc(value).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Provenance(BaseModel):
    """Where a card came from: the session, turn and message, plus a short quote."""

    model_config = ConfigDict(extra="forbid")

    session_id: str | None = None
    turn: int | None = Field(default=None, ge=0)
    message_id: str | None = None
    quote: str | None = Field(default=None, max_length=MAX_QUOTE_CHARS)
    original_id: str | None = None  # the id an imported card had in the tool it came from
    agent: str | None = Field(default=None, max_length=64)  # the subagent that saved it (its type, e.g. "Explore")


class MemoryCard(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    id: str = Field(default_factory=new_card_id, pattern=CARD_ID_PATTERN)
    content: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS)
    memory_type: MemoryType = "fact"
    scope: Scope = "project"
    scope_id: str | None = None
    source: Source = "assistant"
    provenance: Provenance = Field(default_factory=Provenance)
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    status: Status = "active"
    supersedes: str | None = Field(default=None, pattern=CARD_ID_PATTERN)
    superseded_by: str | None = Field(default=None, pattern=CARD_ID_PATTERN)
    task_hint: str | None = None
    files: list[str] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)
    last_used_at: datetime | None = None
    access_count: int = Field(default=0, ge=0)
    backstory: str | None = None
    person: str | None = None
    relationship: str | None = None
    # Where restatements merged into this card came from (a merge keeps every provenance).
    merged_from: list[Provenance] = Field(default_factory=list)
    # A summary card (``memagent memory reflect``) links the cards it summarises; they stay active.
    members: list[str] = Field(default_factory=list)

    @field_validator("content")
    @classmethod
    def _content_not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("content is empty")
        return value

    @field_validator("members")
    @classmethod
    def _member_ids(cls, value: list[str]) -> list[str]:
        bad = [item for item in value if not CARD_ID_RE.fullmatch(str(item))]
        if bad:
            raise ValueError(f"members must be card ids (m_ and 12 hex digits), not {bad[0]!r}")
        return list(dict.fromkeys(value))

    @field_validator("created_at", "updated_at", "last_used_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else to_utc(value)

    @property
    def active(self) -> bool:
        return self.status == "active"

    # -- Chroma record form -------------------------------------------------------------

    def to_metadata(self) -> dict[str, str | int | float | bool]:
        """Every field but ``id`` and ``content``, flattened for Chroma (no ``None`` values)."""
        meta: dict[str, str | int | float | bool] = {}
        for key, value in self.model_dump(exclude={"id", "content"}).items():
            if value is None:
                continue
            if key == "provenance":
                prov = {k: v for k, v in value.items() if v is not None}
                if prov:
                    meta[key] = json.dumps(prov, ensure_ascii=False, sort_keys=True)
            elif key in ("files", "merged_from", "members"):
                if value:
                    meta[key] = json.dumps(value, ensure_ascii=False)
            elif key in _TIME_KEYS:
                meta[key] = iso_utc(value)
            else:
                meta[key] = value
        return meta

    @classmethod
    def from_record(cls, card_id: str, document: str | None, metadata: Mapping[str, object] | None) -> MemoryCard:
        """Inverse of :meth:`to_metadata`; raises ``ValueError`` on a malformed record."""
        data: dict[str, object] = dict(metadata or {})
        for key in _JSON_KEYS:
            raw = data.get(key)
            if isinstance(raw, str):
                try:
                    data[key] = json.loads(raw)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"card {card_id}: field {key} is not valid JSON") from exc
        known = set(cls.model_fields)
        data = {k: v for k, v in data.items() if k in known}
        data["id"] = card_id
        data["content"] = document or ""
        return cls.model_validate(data)

    def citation(self) -> str:
        return f"[Memory#{self.id}]"


__all__ = [
    "CARD_ID_PATTERN",
    "CARD_ID_RE",
    "MEMORY_TYPES",
    "MemoryCard",
    "MemoryType",
    "Provenance",
    "SCOPES",
    "SOURCES",
    "STATUSES",
    "Scope",
    "Source",
    "Status",
    "iso_utc",
    "new_card_id",
    "to_utc",
    "utc_now",
]
