"""A learned card held for review is held before it is saved: written archived, it corrects
nothing, archives nothing at the quota and leaves the card it would correct untouched until the
user keeps it. And the card a candidate carries from extraction is the card written to disk.

Real store, real embedder, the learning pipeline against the fake Messages API (a rule-based
model in ``memory.learnkit``)."""

from __future__ import annotations

from memagent.config import Settings
from memagent.memory.hygiene import approve, review_queue
from memory.learnkit import Fact, Session, assistant, learn_facts, user


def _always_add(candidate, existing):
    return {"action": "ADD", "target": None}


def test_a_held_card_the_correction_rule_reads_as_a_correction_retires_nothing(brain, make_pipeline, service, history):
    old = service.save("The coverage threshold for the api package is 80%.", "constraint").card
    brain.decide = _always_add  # the model calls it new; the correction rule would call it a correction
    report = learn_facts(
        brain,
        make_pipeline,
        [Fact("coverage now 90", "The coverage threshold for the api package is 90% now.", "constraint")],
        require_review=True,
    )
    (held_id,) = report.stored
    assert service.get(held_id).status == "archived" and service.get(held_id).supersedes is None
    assert service.get(old.id).status == "active" and service.get(old.id).superseded_by is None
    assert [h.card.id for h in service.search("coverage threshold api package", 5)] == [old.id]


def test_a_held_correction_never_rewrites_its_target(brain, make_pipeline, service, history, paths):
    first = learn_facts(brain, make_pipeline, [Fact("coverage is 80", "The coverage threshold is 80%.", "constraint")])
    (old_id,) = first.stored
    (old_file,) = list(paths.memory.rglob(f"{old_id}.md"))
    before = old_file.read_bytes()
    second = learn_facts(
        brain,
        make_pipeline,
        [Fact("coverage is 90", "The coverage threshold is 90%.", "constraint")],
        require_review=True,
    )
    (new_id,) = second.stored
    assert old_file.read_bytes() == before  # not marked superseded and then put back
    item = next(i for i in review_queue(service, history) if i.card.id == new_id)
    assert item.intended_action == "UPDATE" and item.target_id == old_id
    approve(service, history, item)
    assert service.get(old_id).superseded_by == new_id and service.get(new_id).supersedes == old_id


def test_a_held_card_at_the_quota_archives_no_active_card(brain, make_pipeline, open_service, history, model):
    from memagent.memory.learning import LearningPipeline

    service = open_service("s", settings=Settings(memory_max_cards=2))
    kept = [
        service.save("Releases are tagged from the main branch.", "fact").card.id,
        service.save("The changelog lives in docs/CHANGES.md.", "fact").card.id,
    ]
    brain.facts = [Fact("we use uv", "The project manages its dependencies with uv.", "procedure")]
    pipeline = LearningPipeline(model, service, session_id="s", settings=Settings(), history=history)
    pipeline.require_review = True
    session = Session()
    session.add(user("Notes: we use uv"), assistant("ok"))
    (held_id,) = pipeline.process(session.messages, session.ids, "turns").stored
    assert service.get(held_id).status == "archived"
    assert [service.get(i).status for i in kept] == ["active", "active"]
    assert service.notices() == []  # no "memory_max_cards reached" notice: nothing was archived


def test_the_card_a_candidate_carries_is_the_card_written(brain, make_pipeline, service):
    report = learn_facts(brain, make_pipeline, [Fact("deploys on Fridays", "The team deploys on Fridays.", "habit")])
    (decision,) = report.decisions
    stored = service.get(decision.card_id)
    assert stored is not None and stored.id == decision.candidate.card.id
    assert stored.content == decision.candidate.card.content and stored.memory_type == "habit"
    assert stored.provenance.session_id == "sess-1" and stored.provenance.quote == "deploys on Fridays"
