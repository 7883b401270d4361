"""Forgetting what a session or a source taught, imports from other tools, expiry and archival."""

from __future__ import annotations

from datetime import timedelta

from memagent.config import Settings
from memagent.memory.cards import utc_now


def test_forget_what_a_session_or_a_source_taught(open_service):
    one = open_service("sess-1")
    learned = one.save("The parser uses a Pratt loop", "fact", source="assistant").card
    from_tool = one.save("pytest reported 412 tests collected", "event", source="tool").card
    two = open_service("sess-2")
    kept = two.save("The lexer is hand written", "fact").card
    merged = two.save("The parser uses a Pratt loop.", "fact")
    assert merged.status == "duplicate" and merged.card.merged_from[0].session_id == "sess-2"

    report = two.forget_source("tool")
    assert report.erased == [from_tool.id]
    report = two.forget_session("sess-1")
    assert report.erased == [learned.id]
    assert two.get(kept.id) is not None and two.get(learned.id) is None


def test_import_gives_foreign_ids_memagent_ids_and_never_relinks_forgotten_cards(service):
    report = service.import_cards(
        [
            {"id": "note-17", "content": "The search service is written in Go"},
            {"id": 42, "content": "Nightly backups are kept for thirty days", "memory_type": "fact"},
        ]
    )
    assert report.refused == [] and report.added == 2
    cards = [service.get(i) for i in report.ids]
    assert all(c.id.startswith("m_") for c in cards)
    assert sorted(c.provenance.original_id for c in cards) == ["42", "note-17"]

    old = service.save("The cache TTL is five minutes", "fact").card
    new = service.correct(old.id, "The cache TTL is ten minutes").card
    exported = service.export()
    assert service.forget([new.id]) == 2  # the correction and the card it superseded
    skipped = service.import_cards([r for r in exported if r["id"] == new.id])
    assert skipped.added == 0 and [i for _, i, _ in skipped.forgotten] == [new.id]  # a forgotten id stays forgotten
    again = service.import_cards([r for r in exported if r["id"] == new.id], force=True)
    assert again.added == 1
    restored = service.get(new.id)
    assert restored is not None and restored.supersedes is None  # no link to the erased card


def test_session_cards_expire_and_unused_doubtful_cards_are_archived(open_service):
    settings = Settings(memory_session_card_days=1, memory_archive_after_days=30, memory_archive_below_confidence=0.75)
    old_session = open_service("sess-old", settings=settings)
    stale = old_session.save("Scratch: the flaky test is test_retry", "context", "session").card
    doubtful = old_session.save("The CDN might be Fastly", "fact", confidence=0.7).card
    sure = old_session.save("The CDN config lives in infra/cdn", "fact", confidence=0.95).card
    long_ago = utc_now() - timedelta(days=60)
    for card in (stale, doubtful, sure):
        old_session.update_card(card.id, touch=False, created_at=long_ago)
    current = open_service("sess-new", settings=settings)
    fresh = current.save("Scratch: today we look at the importer", "context", "session").card
    assert current.maintain() == 2
    assert current.get(stale.id) is None and current.get(fresh.id) is not None
    assert current.get(doubtful.id).status == "archived" and current.get(sure.id).status == "active"
