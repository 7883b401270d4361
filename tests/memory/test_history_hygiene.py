"""The learning history (show, erase, stats), confidence decay, stale notes and review."""

from __future__ import annotations

import os
import time
from datetime import timedelta

from memagent.memory.cards import MemoryCard, utc_now
from memagent.memory.hygiene import (
    FLOOR,
    apply_decay,
    approve,
    decayed_confidence,
    reject,
    review_queue,
    stale_note,
)
from memagent.memory.learning import on_forget
from memagent.memory.learning_history import LearningHistory, describe_record, erase, history_for, learning_stats
from memagent.memory.profiles import cache_files, render_profile
from memory.learnkit import Fact, all_cards, learn_facts

SECRET = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 4


def _files_containing(needle: bytes, *dirs) -> list:
    found = []
    for directory in dirs:
        for dirpath, _, names in os.walk(directory):
            for name in names:
                path = os.path.join(dirpath, name)
                with open(path, "rb") as fh:
                    if needle in fh.read():
                        found.append(path)
    return found


def test_history_renders_a_card_and_forget_erases_its_text(brain, make_pipeline, service, paths):
    report = learn_facts(
        brain,
        make_pipeline,
        [
            Fact("the nightly job runs at 02:00 UTC", "The nightly backup job runs at 02:00 UTC.", "fact"),
            Fact("I like tabs", "The user indents code with tabs.", "preference", scope="user"),
        ],
        "Note: the nightly job runs at 02:00 UTC. Also I like tabs.",
    )
    job, tabs = report.stored
    shown = history_for(paths, job)
    assert [(r["kind"], r["action"], r["content"]) for r in shown] == [
        ("decision", "ADD", "The nightly backup job runs at 02:00 UTC.")
    ]
    line = describe_record(shown[0], job)
    assert line.endswith("ADD (session sess-1, message 1): no similar memory")
    assert history_for(paths, tabs)[0]["scope"] == "user"
    assert (paths.user_memory / "local" / "history.jsonl").exists()  # user cards are logged beside the user store
    render_profile(service, paths)
    assert any(p.exists() for p in cache_files(paths))

    service.forget([job, tabs])
    on_forget(paths, [job, tabs])
    for needle in (b"nightly backup job", b"indents code with tabs"):
        assert _files_containing(needle, paths.memory, paths.user_memory) == []
    tombstone = history_for(paths, job)[0]
    assert tombstone["action"] == "ADD" and tombstone["erased"] is True and "content" not in tombstone


def test_erase_keeps_other_cards_text(tmp_path):
    history = LearningHistory(tmp_path / "p" / "history.jsonl", tmp_path / "u" / "history.jsonl")
    history.append({"kind": "decision", "action": "ADD", "card_id": "m_aaaaaaaaaaaa", "content": "alpha text"})
    history.append({"kind": "decision", "action": "NOOP", "target_id": "m_aaaaaaaaaaaa", "content": "alpha again"})
    history.append(
        {"kind": "decision", "action": "ADD", "card_id": "m_bbbbbbbbbbbb", "content": "beta text"}, scope="user"
    )
    assert history.erase(["m_aaaaaaaaaaaa"]) == 2
    raw = history.project_file.read_bytes() + history.user_file.read_bytes()
    assert b"alpha" not in raw and b"beta text" in raw
    assert not list(history.project_file.parent.glob("*.tmp"))


def test_stats_count_runs_and_refusals_by_reason_without_storing_secrets(brain, make_pipeline, paths):
    learn_facts(
        brain,
        make_pipeline,
        [
            Fact("our Anthropic key", f"The project's Anthropic API key is {SECRET}.", "fact"),
            Fact("maybe we use Redis", "The project might use Redis.", "fact", confidence=0.5),
            Fact("logs go to Loki", "Application logs of the project are shipped to Loki.", "fact"),
        ],
        f"Here is our Anthropic key {SECRET}; maybe we use Redis; logs go to Loki.",
    )
    stats = learning_stats(paths)
    assert stats["extraction_runs"] == 1
    assert stats["decisions"] == {"ADD": 1, "REFUSED": 2}
    assert stats["gate_refusals"] == {"low confidence": 1, "secret": 1}
    assert stats["input_tokens"] > 0 and stats["candidates"] == 3
    assert _files_containing(SECRET.encode(), paths.memory, paths.user_memory) == []


def test_erase_helper_is_a_noop_without_history(paths):
    assert erase(paths, ["m_aaaaaaaaaaaa"]) == 0
    assert not paths.memory.exists()


def test_decay_is_idempotent_bounded_and_recovers_on_use(service, history):
    result = service.save("The staging database is called stg-main.", "fact", confidence=0.9)
    card = result.card
    now = card.created_at + timedelta(days=30 + 180)
    changes = apply_decay(service, history, now)
    assert [(c.card_id, c.before) for c in changes] == [(card.id, 0.9)]
    assert service.get(card.id).confidence == 0.45
    assert apply_decay(service, history, now) == []  # at most once a day
    assert apply_decay(service, history, now, force=True) == []  # and idempotent anyway

    later = now + timedelta(days=400)
    apply_decay(service, history, later, force=True)
    assert service.get(card.id).confidence == FLOOR

    service.note_citations(f"As [Memory#{card.id}] says")  # used again: the anchor moves to now
    used = service.get(card.id)
    assert decayed_confidence(0.9, used, used.last_used_at + timedelta(days=1)) == 0.9
    apply_decay(service, history, used.last_used_at + timedelta(days=1), force=True)
    assert service.get(card.id).confidence == 0.9


def test_stale_note_for_missing_and_changed_files(paths):
    root = paths.root
    (root / "app.py").write_text("print(1)\n")
    (root / "old.py").write_text("x = 1\n")
    card = MemoryCard(content="The entry point is app.py; helpers live in old.py.", files=["app.py", "old.py"])
    card.updated_at = utc_now() + timedelta(seconds=5)
    assert stale_note(card, root) is None
    (root / "old.py").unlink()
    future = time.time() + 60
    os.utime(root / "app.py", (future, future))
    note = stale_note(card, root)
    assert note is not None
    assert "old.py no longer exists" in note and "app.py changed since" in note
    assert stale_note(MemoryCard(content="No files here at all."), root) is None


def test_require_review_holds_automatic_cards_until_kept(brain, make_pipeline, service, history):
    report = learn_facts(
        brain,
        make_pipeline,
        [Fact("we ship on Thursdays", "The team ships releases on Thursdays.", "habit")],
        require_review=True,
    )
    (card_id,) = report.stored
    assert service.get(card_id).status == "archived"
    assert service.search("when do we ship releases", 5) == []
    queue = review_queue(service, history)
    assert [(i.card.id, i.pending) for i in queue] == [(card_id, True)]
    approve(service, history, queue[0])
    assert service.get(card_id).status == "active"
    assert review_queue(service, history) == []


def test_pending_correction_replaces_its_target_only_when_kept(brain, make_pipeline, service, history):
    first = learn_facts(brain, make_pipeline, [Fact("coverage is 80%", "The coverage threshold is 80%.", "constraint")])
    (old_id,) = first.stored
    second = learn_facts(
        brain,
        make_pipeline,
        [Fact("coverage is 90%", "The coverage threshold is 90%.", "constraint")],
        require_review=True,
    )
    (new_id,) = second.stored
    assert service.get(old_id).status == "active"
    item = next(i for i in review_queue(service, history) if i.card.id == new_id)
    assert item.intended_action == "UPDATE" and item.target_id == old_id
    approve(service, history, item)
    assert service.get(old_id).status == "superseded" and service.get(old_id).superseded_by == new_id
    assert service.get(new_id).supersedes == old_id and service.get(new_id).active


def test_review_queue_lists_automatic_cards_and_reject_forgets(brain, make_pipeline, service, history, paths):
    service.save("The user writes commit messages in English.", "preference", "user", source="user")
    report = learn_facts(
        brain, make_pipeline, [Fact("we use uv", "The project manages dependencies with uv.", "procedure")]
    )
    queue = review_queue(service, history)
    assert [i.card.id for i in queue] == report.stored  # the user's own card is not queued
    reject(service, history, queue[0], paths)
    assert service.get(report.stored[0]) is None
    assert [c.content for c in all_cards(service)] == ["The user writes commit messages in English."]
    assert _files_containing(b"dependencies with uv", paths.memory, paths.user_memory) == []


def test_decay_reads_a_damaged_base_as_absent(service, history):
    """A ``decay`` record whose ``base`` is not a number (a hand-edited or foreign history line)
    is ignored: decay still runs, from the card's own confidence."""
    card = service.save("The release branch is cut on Thursdays.", "fact", confidence=0.9).card
    for damaged in ("high", None, [0.9], True):
        history.append({"kind": "decay", "card_id": card.id, "base": damaged})
    changes = apply_decay(service, history, card.created_at + timedelta(days=30 + 180))
    assert [(c.card_id, c.before, c.after) for c in changes] == [(card.id, 0.9, 0.45)]


def test_learning_stats_read_damaged_counts_as_zero(history, paths):
    """Run records with counts of the wrong type add nothing instead of failing `memory stats`."""
    history.append({"kind": "run", "model_calls": 1, "candidates": "many", "message_ids": "m1", "input_tokens": 7})
    history.append({"kind": "decision", "action": "REFUSED", "reason": ["not", "text"]})
    stats = learning_stats(paths)
    assert (stats["candidates"], stats["messages_processed"], stats["input_tokens"]) == (0, 0, 7)
    assert stats["gate_refusals"] == {"unknown": 1}
