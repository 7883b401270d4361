"""The card model: validation of every field and the Chroma record round trip."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from memagent.memory.cards import MemoryCard, new_card_id


def test_defaults_and_id_format():
    card = MemoryCard(content="  Use ruff  ")
    assert card.content == "Use ruff"
    assert card.id.startswith("m_") and len(card.id) == 14
    assert card.status == "active" and card.memory_type == "fact" and card.scope == "project"
    assert card.created_at.tzinfo is not None and card.created_at.utcoffset() == timedelta(0)
    assert new_card_id() != new_card_id()


@pytest.mark.parametrize(
    "bad",
    [
        {"id": "m_XYZ"},
        {"id": "3fa2c1d4e5f6"},
        {"memory_type": "opinion"},
        {"scope": "global"},
        {"source": "internet"},
        {"status": "deleted"},
        {"confidence": 1.5},
        {"importance": -0.1},
        {"access_count": -1},
        {"supersedes": "not-an-id"},
        {"content": "   "},
        {"provenance": {"turn": -2}},
        {"provenance": {"quote": "q" * 301}},
        {"colour": "red"},
    ],
)
def test_invalid_fields_are_rejected(bad):
    with pytest.raises(ValidationError):
        MemoryCard(**{"content": "valid content", **bad})


def test_assignment_is_validated():
    card = MemoryCard(content="valid content")
    with pytest.raises(ValidationError):
        card.status = "gone"


def test_naive_and_offset_times_become_utc():
    card = MemoryCard(
        content="valid content",
        created_at=datetime(2026, 1, 2, 3, 4, 5),
        last_used_at=datetime(2026, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2))),
    )
    assert card.created_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert card.last_used_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_record_round_trip_keeps_every_field():
    card = MemoryCard(
        content="Alice (the user's manager) wants weekly reports",
        memory_type="preference",
        scope="session",
        scope_id="sess-42",
        source="user",
        provenance={"session_id": "sess-42", "turn": 4, "message_id": "msg_1", "quote": "weekly please"},
        confidence=0.9,
        importance=0.7,
        supersedes=new_card_id(),
        task_hint="write report",
        files=["docs/report.md", "ünïcode.txt"],
        last_used_at=datetime(2026, 11, 20, tzinfo=UTC),
        access_count=3,
        backstory="came up while planning",
        person="Alice",
        relationship="manager",
    )
    meta = card.to_metadata()
    assert all(isinstance(v, (str, int, float, bool)) for v in meta.values())
    assert "superseded_by" not in meta  # None values are omitted
    assert json.loads(meta["files"]) == ["docs/report.md", "ünïcode.txt"]
    assert json.loads(meta["provenance"])["turn"] == 4
    assert meta["created_at"].endswith("Z")
    back = MemoryCard.from_record(card.id, card.content, meta)
    assert back == card


def test_from_record_rejects_garbage():
    with pytest.raises(ValueError):
        MemoryCard.from_record("m_000000000000", "text", {"files": "[not json"})
    with pytest.raises(ValueError):
        MemoryCard.from_record("m_000000000000", "text", {"confidence": 7})
