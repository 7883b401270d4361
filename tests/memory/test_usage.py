"""Use of cards is recorded (injected into a turn, returned by a search the model asked for),
batched off the turn's path, and feeds ranking, decay and ``memory stats``."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from fakeapi import FakeAnthropic
from memagent.memory.cards import utc_now
from memagent.memory.catalog import Catalog
from memagent.memory.errors import MemoryUnavailable
from memagent.memory.hygiene import decayed_confidence
from memagent.memory.ranking import CardSignals, RankingWeights, blend_factor, signals_of
from memagent.memory.usage import UsageBuffer, usage_signal
from memory.learnkit import Brain

LEXICAL = {"MEMAGENT_EMBEDDER": "lexical"}
HARBOR = "Staging deploys go through the harbor tool with a blue-green switch."
BILLING = "The billing service retries failed webhooks with exponential backoff."


def _count_transactions(monkeypatch) -> list[int]:
    writes: list[int] = []
    real = Catalog.transaction

    def counted(self, *args, **kwargs):
        writes.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Catalog, "transaction", counted)
    return writes


def _twins(service):
    """Two cards equally relevant to 'which queue does the worker use?' (same shape, same words)."""
    a = service.save("The alpha worker reads jobs from the redis queue.", "fact", confidence=0.8).card.id
    b = service.save("The omega worker reads jobs from the redis queue.", "fact", confidence=0.8).card.id
    return a, b


def test_a_card_retrieved_three_times_ranks_above_an_equal_card_never_used(open_service, lexical_embedder, monkeypatch):
    service = open_service(embedder=lexical_embedder)  # equal words, equal relevance: a true tie
    a, b = _twins(service)
    query = "which redis queue does the worker read jobs from?"
    ranked = service.search(query, 2, min_score=0)
    assert {hit.card.id for hit in ranked} == {a, b} and ranked[0].score == pytest.approx(ranked[1].score)
    loser = ranked[1].card.id
    writes = _count_transactions(monkeypatch)
    for _ in range(3):
        service.note_retrieved([loser])
    assert writes == []  # nothing written on the search's path
    assert service.flush_usage() == 1
    assert len(writes) == 1  # three uses, one write
    assert service.flush_usage() == 0 and len(writes) == 1  # nothing left to write
    after = service.search(query, 2, min_score=0)
    assert after[0].card.id == loser
    assert after[0].parts["usage"] == pytest.approx(usage_signal(3))


def test_injection_is_a_use_written_at_the_turn_end_not_during_it(service, monkeypatch):
    card = service.save(HARBOR, "fact", confidence=0.8).card.id
    service.save(BILLING, "fact", confidence=0.8)
    writes = _count_transactions(monkeypatch)
    for _ in range(2):
        block = service.context_for_turn("How do we deploy to staging with harbor?")
        assert block is not None and card in block
    assert writes == []
    service.flush_usage()
    assert len(writes) == 1
    stats = service.stats()
    assert [(c["id"], c["uses"]) for c in stats["most_used"]] == [(card, 2)]


def test_uses_noted_but_not_written_are_written_when_the_service_closes(open_service, paths):
    first = open_service()
    card = first.save(HARBOR, "fact", confidence=0.8).card.id
    first.note_retrieved([card, card])  # one search returning it twice is one use
    first.note_retrieved([card])
    first.close()
    again = open_service("s2")
    assert again.get(card).access_count == 2


def test_a_failed_flush_keeps_its_uses_for_the_next_one(service, monkeypatch):
    card = service.save(HARBOR, "fact", confidence=0.8).card.id
    service.note_retrieved([card])

    def broken(self, *args, **kwargs):
        raise OSError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(Catalog, "transaction", broken)
        with pytest.raises(MemoryUnavailable, match="disk full"):
            service.flush_usage()
    assert service.flush_usage() == 1
    assert service.get(card).access_count == 1


def test_the_usage_term_is_small_and_bounded():
    now = utc_now()
    weights = RankingWeights()
    never = signals_of(CardSignals(id="m_a", created_at=now), now=now, current_task=None, weights=weights)
    always = signals_of(CardSignals(id="m_b", created_at=now, uses=10_000), now=now, current_task=None, weights=weights)
    assert never["usage"] == 0.0 and always["usage"] == 1.0
    lift = blend_factor(always, weights) / blend_factor(never, weights)
    assert 1.0 < lift <= 1.0 + weights.usage / blend_factor(never, weights) + 1e-9
    assert usage_signal(1) < usage_signal(3) < usage_signal(20) == 1.0


def test_a_card_used_often_decays_more_slowly():
    from memagent.memory.cards import MemoryCard

    old = utc_now() - timedelta(days=400)
    idle = MemoryCard(content="x", memory_type="fact", confidence=0.9, created_at=old, last_used_at=old)
    used = idle.model_copy(update={"access_count": 10})
    now = utc_now()
    assert decayed_confidence(0.9, used, now) > decayed_confidence(0.9, idle, now)


def test_the_buffer_merges_repeated_uses_and_keeps_the_latest_time():
    buffer = UsageBuffer()
    early, late = utc_now() - timedelta(hours=1), utc_now()
    buffer.note(["m_1", "m_2"], late)
    buffer.note(["m_1"], early)
    taken = buffer.take()
    assert taken == {"m_1": (2, late), "m_2": (1, late)} and len(buffer) == 0


@pytest.mark.timeout(600)  # real CLI runs: slow on a loaded machine
def test_cards_injected_by_real_turns_are_counted_and_a_cli_search_is_not(run_cli, project):
    env = LEXICAL
    added = run_cli("-C", str(project), "memory", "add", HARBOR, "--json", env=env)
    assert added.returncode == 0, added.stderr
    card = json.loads(added.stdout)["card"]["id"]
    run_cli("-C", str(project), "memory", "add", BILLING, env=env)
    brain = Brain()
    with FakeAnthropic(responder=brain) as fake:
        for _ in range(3):
            result = run_cli(
                "-C",
                str(project),
                "-p",
                "How do we deploy to staging with harbor?",
                env={"ANTHROPIC_BASE_URL": fake.url, **env},
                timeout=180,
            )
            assert result.returncode == 0, result.stderr
    searched = run_cli("-C", str(project), "memory", "search", "harbor staging deploy", env=env)
    assert card in searched.stdout
    stats = json.loads(run_cli("-C", str(project), "memory", "stats", "--json", env=env).stdout)
    used = {c["id"]: c["uses"] for c in stats["most_used"]}
    assert used.get(card) == 3  # three turns injected it; the command-line search is not a use
    text_stats = run_cli("-C", str(project), "memory", "stats", env=env).stdout
    assert f"most used: {card} (fact, 3×)" in text_stats
