"""Retrieval that finds what the user means, through the real service: a store of several
projects imported like a teammate's export, questions that describe a system instead of naming
it, ask who, name a period, or rest on a false premise; correction chains shown as history;
card facts that follow erasure and fill old catalogs."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import pytest

from memagent.memory import card_facts
from memagent.memory.injection import CITATION_RE as CITATION

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)
CARDS = {
    "h-def": ("2025-11-25", "Harbor is our deploy CLI: a Go tool that builds container images and rolls them out."),
    "h-build": ("2025-11-26", "Build Harbor with `make build`; the binary lands in bin/harbor."),
    "h-owner": ("2025-11-27", "Tomás Ferreira owns Harbor and reviews every change to its rollout logic."),
    "h-rollout": ("2026-01-12", "Harbor's rollout logic waits for pods to be ready before promoting a release."),
    "h-keys": ("2026-02-17", "Ask Kenji Watanabe about Harbor's registry credentials; he rotates them."),
    "b-def": ("2025-11-23", "Beacon is the notification service: it sends email, SMS and mobile push messages."),
    "b-tests": ("2025-12-08", "Run Beacon's unit tests with `./gradlew test`; integration tests need Docker."),
    "b-keys": ("2026-01-14", "Beacon's idempotency keys live in Redis with a 24-hour TTL."),
    "b-outage": ("2026-11-01", "On 9 January 2026 Beacon sent duplicate push notifications for two hours."),
    "b-jan": ("2026-01-20", "Beacon batches the digest emails and sends them at 07:00 local time."),
    "s-def": ("2025-11-20", "Sluice is the ingestion pipeline: it pulls partner files and writes Parquet."),
    "s-dedupe": ("2026-01-27", "Sluice's dedupe tokens live in the Postgres table sluice_seen, not in Redis."),
    "s-stall": (
        "2026-10-30",
        "On 12 March 2026 Sluice stalled for six hours on a partner file with a byte order mark.",
    ),
    "s-march": ("2026-03-04", "Sluice consumer group ingest-east reads partitions 0 to 5 of the events topic."),
    "s-retention": ("2026-02-02", "Sluice keeps raw partner files in S3 for 90 days."),
    "s-cut": ("2026-07-01", "Sluice's raw file retention was cut from 90 to 30 days in July."),
}


@pytest.fixture
def store(service):
    service.clock = lambda: NOW
    records = [
        {"id": key, "content": text, "created_at": f"{day}T10:00:00Z", "memory_type": "fact"}
        for key, (day, text) in CARDS.items()
    ]
    report = service.import_cards(records)
    assert report.added == len(CARDS) and report.superseded == 1
    service.original = {c.id: c.provenance.original_id for c in service.list(include_all=True)}
    return service


def _top(service, question: str, k: int = 5) -> list[str]:
    return [service.original[hit.card.id] for hit in service.search(question, k)]


def test_a_described_system_finds_the_card_that_names_it(store):
    assert _top(store, "How do I compile the deploy CLI?")[0] == "h-build"  # not the definition


def test_variants_of_descriptions_and_the_definition_still_answers_what_it_is(store):
    assert _top(store, "How do I run the notification service's tests?")[0] == "b-tests"
    assert _top(store, "What is the ingestion pipeline?")[0] == "s-def"


def test_who_questions_prefer_the_card_that_names_the_owner(store):
    assert _top(store, "Who signs off on changes to the deploy CLI's rollout logic?")[0] == "h-owner"


def test_who_question_variant_check_with_about_credentials(store):
    assert _top(store, "Who should I check with about the registry credentials?")[0] == "h-keys"


def test_a_period_named_in_the_question_finds_the_card_whose_text_is_dated_then(store):
    # s-stall was written in October about March; s-march was written in March about partitions
    assert _top(store, "What happened to the ingestion pipeline in mid-March?")[0] == "s-stall"


def test_period_variants_the_january_outage_and_a_clock_of_its_own(store):
    assert _top(store, "What was the January outage in Beacon about?")[0] == "b-outage"
    store.clock = lambda: datetime(2027, 2, 1, tzinfo=UTC)  # "January" is now January 2027
    assert _top(store, "What was the January outage in Beacon about?")[0] != "b-jan"


def test_a_false_premise_finds_the_card_that_denies_it(store):
    assert _top(store, "How many hours is the Redis TTL on Sluice's dedupe tokens?")[0] == "s-dedupe"


def test_a_superseded_card_is_shown_only_as_history_of_its_successor(store):
    hits = store.search("How long do we keep raw partner files?", 5)
    ids = [store.original[h.card.id] for h in hits]
    assert ids[0] == "s-cut" and "s-retention" not in ids
    assert [store.original[c.id] for c in hits[0].history] == ["s-retention"]
    assert "corrects [Memory#" in hits[0].history_note() and "90 days" in hits[0].history_note()
    everything = store.search("How long do we keep raw partner files?", 5, include_inactive=True)
    assert "s-retention" not in [store.original[h.card.id] for h in everything]


def test_a_linked_predecessor_left_active_by_hand_is_still_folded(store):
    cut = next(i for i, o in store.original.items() if o == "s-cut")
    old = next(i for i, o in store.original.items() if o == "s-retention")
    store.update_card(old, status="active")  # a hand edit; the link stays
    ids = [store.original[h.card.id] for h in store.search("How long do we keep raw partner files?", 5)]
    assert ids[0] == "s-cut" and "s-retention" not in ids
    assert store.get(cut).supersedes == old


def test_card_facts_leave_with_an_erased_card(store, paths):
    harbor = next(i for i, o in store.original.items() if o == "h-def")
    assert "Harbor" in store.recall.entity_index(store.core.stores_in_use()).systems
    store.forget([harbor])
    assert "Harbor" not in store.recall.entity_index(store.core.stores_in_use()).systems
    db = sqlite3.connect(paths.memory / "local" / "index" / "catalog.sqlite3")
    try:
        for table in ("card_links", "card_periods", "card_mentions"):
            assert db.execute(f"SELECT COUNT(*) FROM {table} WHERE id = ?", (harbor,)).fetchone()[0] == 0
    finally:
        db.close()


def test_a_catalog_from_before_card_facts_is_filled_on_the_next_search(store, paths):
    db = store.core.stores["project"].catalog.db()
    db.execute("DELETE FROM card_mentions")
    db.execute("DELETE FROM meta WHERE key = 'card_facts'")
    assert not card_facts.is_filled(db)
    assert _top(store, "How do I compile the deploy CLI?")[0] == "h-build"
    assert card_facts.is_filled(db) and db.execute("SELECT COUNT(*) FROM card_mentions").fetchone()[0] > 0


def test_each_part_can_be_switched_off(store):
    store.retrieval.entities = False
    assert (
        store.recall.understand("How do I compile the deploy CLI?", store.core.stores_in_use(), NOW).facts.systems
        == frozenset()
    )


def test_the_injected_block_keeps_its_budget_and_the_best_card(service):
    long_text = "Harbor's rollout runbook: " + " ".join(f"step {i} checks the canary metrics." for i in range(40))
    service.save("Harbor rolls out with a 5 minute canary before promoting.", "procedure")
    for i in range(4):
        service.save(f"{long_text} Variant {i} for cluster prod-{i}.", "procedure")
    block = service.context_for_turn("How does the Harbor rollout and canary work?")
    cited = CITATION.findall(block)
    assert 1 <= len(cited) < 5 and len(block) <= service.knobs.block_chars + 600  # + marker and instruction
    huge = service.context_for_turn("Which runbook steps check the canary metrics for prod-3?")
    assert len(CITATION.findall(huge)) >= 1  # the best card goes in even when it alone is over budget
