"""Saying a fact again strengthens it: confidence rises (bounded by its source's cap), the new
evidence is kept, and its decay clock restarts — through the gate's near-duplicate path and the
consolidator's NOOP, the one authority on restatements."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from fakeapi import FakeAnthropic
from memagent.memory.cards import utc_now
from memagent.memory.hygiene import apply_decay
from memagent.memory.reinforcement import SOURCE_CAPS, raised_confidence
from memory.learnkit import Brain, Fact, Session, assistant, user

LEXICAL = {"MEMAGENT_EMBEDDER": "lexical"}
UV = Fact("we manage packages with uv", "The project manages Python packages with uv.", "procedure", confidence=0.75)


@pytest.mark.timeout(600)  # two real CLI runs: slow on a loaded machine
def test_a_restated_fact_grows_more_confident_across_sessions(run_cli, project):
    brain = Brain(facts=[UV])
    confidences = []
    for words in ("Remember: we manage packages with uv.", "Again, we manage packages with uv, always."):
        with FakeAnthropic(responder=brain) as fake:
            result = run_cli(
                "-C", str(project), "-p", words, env={"ANTHROPIC_BASE_URL": fake.url, **LEXICAL}, timeout=180
            )
            assert result.returncode == 0, result.stderr
        listing = run_cli("-C", str(project), "memory", "list", "--all", "--json", env=LEXICAL)
        (card,) = [c for c in json.loads(listing.stdout) if c["memory_type"] != "event"]  # not the session cards
        confidences.append(card["confidence"])
    assert confidences[0] == 0.75 and 0.75 < confidences[1] <= SOURCE_CAPS["user"]
    assert len(card["merged_from"]) == 1 and card["merged_from"][0]["quote"] == UV.trigger
    assert card["last_used_at"] is not None


def test_a_consolidation_noop_reinforces_its_target(brain, make_pipeline, open_service):
    brain.facts = [UV]
    for session_id in ("s1", "s2"):
        session = Session()
        session.add(user("Notes: we manage packages with uv."), assistant("ok"))
        make_pipeline(session_id=session_id).process(session.messages, session.ids, "turns")
    (card,) = open_service().list(include_all=True, limit=10)
    assert card.confidence > 0.75 and card.last_used_at is not None
    assert [p.session_id for p in card.merged_from] == ["s2"]


def test_the_source_caps_bound_reinforcement_and_it_never_lowers():
    value = 0.75
    for _ in range(50):
        value = raised_confidence(value, 0.75, SOURCE_CAPS["user"])
    assert value == pytest.approx(SOURCE_CAPS["user"], abs=0.01) and value <= SOURCE_CAPS["user"]
    assert raised_confidence(0.65, 0.6, SOURCE_CAPS["tool"]) == pytest.approx(0.665)
    assert raised_confidence(0.7, 0.7, SOURCE_CAPS["tool"]) == 0.7  # tool output never passes its cap
    assert raised_confidence(0.95, 0.5, SOURCE_CAPS["assistant"]) == 0.95  # above the cap: kept, not lowered


def test_restating_resets_decay_and_decay_does_not_undo_it(open_service, history):
    service = open_service("s1")
    card = service.save("The deploy target is Fly.io in region ams.", "fact", confidence=0.9, source="user").card
    service.update_card(card.id, touch=False, last_used_at=utc_now() - timedelta(days=200))
    apply_decay(service, history, now=utc_now(), force=True)
    decayed = service.get(card.id).confidence
    assert decayed < 0.9
    again = open_service("s2").save("The deploy target is Fly.io in region ams.", "fact", confidence=0.9, source="user")
    assert again.status == "duplicate" and again.card.confidence > 0.9
    assert apply_decay(service, history, now=utc_now() + timedelta(days=1), force=True) == []
    assert service.get(card.id).confidence == again.card.confidence


def test_memory_stats_shows_the_most_and_least_used_cards(open_service):
    service = open_service("s")
    cited = service.save("The CI runs on GitHub Actions with a matrix of Python versions.", "fact").card
    once = service.save("Releases are tagged vMAJOR.MINOR.PATCH on main.", "procedure").card
    never = service.save("The logo was drawn by the design team in 2024.", "fact").card
    for _ in range(3):
        service.note_citations(f"As [Memory#{cited.id}] says")
    service.note_citations(f"See [Memory#{once.id}].")
    stats = service.stats()
    assert [c["id"] for c in stats["most_used"]] == [cited.id, once.id] and stats["most_used"][0]["uses"] == 3
    assert stats["least_used"][0]["id"] == never.id and stats["least_used"][0]["uses"] == 0
