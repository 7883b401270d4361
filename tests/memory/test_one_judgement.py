"""One authority for duplicates and corrections: every new card meets the correction rule once.

A learned candidate is judged by the rule first; what the rule settles (a restatement, a
correction it is sure of, a card refused by the gate) costs no model call, and the model is asked
only about what the rule leaves open — its answer is then final, never judged again on the way to
disk. Real store and embedder; the consolidator's model is a function counting its calls, or the
scripted model behind the fake Messages API (``memory.learnkit``)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from memagent.memory.cards import MemoryCard, utc_now
from memagent.memory.consolidation import Consolidator
from memagent.memory.hygiene import approve, review_queue
from memagent.memory.saving import Saving
from memagent.memory.screening import Candidate
from memory.learnkit import Fact, learn_facts


@pytest.fixture
def events(monkeypatch):
    """What judged each new card, in order: ``("rule", content)`` for each call of the correction
    rule (``Saving.judge_new_card``); tests add ``("model", …)`` for each consolidation answer."""
    seen: list[tuple[str, str]] = []
    real = Saving.judge_new_card

    def spy(self, card, *args, **kwargs):
        seen.append(("rule", card.content))
        return real(self, card, *args, **kwargs)

    monkeypatch.setattr(Saving, "judge_new_card", spy)
    return seen


def _candidate(content: str, memory_type: str = "fact", source: str = "user") -> Candidate:
    card = MemoryCard(content=content, memory_type=memory_type, scope="project", source=source)
    return Candidate(card=card, quote=content, message_id="1")


def _consolidator(service, events, answer: str = "ADD", **kwargs) -> Consolidator:
    """A consolidator whose model gives ``answer`` to every candidate (and notes that it was asked)."""

    def ask(system: str, prompt: str) -> str:
        numbers = [int(line.split()[1].rstrip(":")) for line in prompt.splitlines() if line.startswith("Candidate ")]
        events.append(("model", prompt))
        return json.dumps({"actions": [{"candidate": n, "action": answer, "target": None} for n in numbers]})

    return Consolidator(service, ask=ask, session_id="s1", **kwargs)


def _always_add(candidate, existing):
    return {"action": "ADD", "target": None}


# --------------------------------------------------------------------------- the defects


def test_a_restatement_the_model_would_add_is_judged_once_by_the_rule(brain, make_pipeline, service, events):
    old = service.save("The project lints Python code with ruff.", "procedure", source="user").card
    events.clear()
    brain.decide = _always_add  # were it asked, the model would call the restatement new
    report = learn_facts(
        brain,
        make_pipeline,
        [Fact("we use ruff for linting", "The project lints its Python code with ruff.", "procedure")],
    )
    assert [(d.action, d.target_id) for d in report.decisions] == [("NOOP", old.id)]
    assert brain.consolidation_prompts == [] and report.consolidation_calls == 0
    assert events == [("rule", "The project lints its Python code with ruff.")]  # once
    assert [c.id for c in service.list()] == [old.id]
    assert service.get(old.id).merged_from  # the restatement reinforced the card it restates


def test_a_correction_the_rule_is_sure_of_costs_no_model_call(service, events):
    old = service.save("The request timeout of the billing API is 30 seconds.", "constraint").card
    events.clear()
    consolidator = _consolidator(service, events)
    (decision,) = consolidator.run([_candidate("The request timeout of the billing API is now 90 seconds.")])
    assert consolidator.model_calls == 0 and [kind for kind, _ in events] == ["rule"]
    assert (decision.action, decision.target_id) == ("UPDATE", old.id)
    assert "correction rule" in decision.reason
    assert service.get(old.id).superseded_by == decision.card_id
    assert service.get(decision.card_id).supersedes == old.id and service.get(decision.card_id).active


def test_the_models_answer_is_final(service, events):
    """A contradiction worded without a correction word: the rule cannot settle it, the model is
    asked, and what it answers is what is written — no judgement after it."""
    old = service.save("The staging environment runs on Heroku.", "fact").card
    events.clear()
    consolidator = _consolidator(service, events, answer="ADD")
    (decision,) = consolidator.run([_candidate("We host the staging environment on Fly.io.")])
    assert [kind for kind, _ in events] == ["rule", "model"]
    assert consolidator.model_calls == 1 and decision.action == "ADD"
    assert service.get(decision.card_id).active and service.get(old.id).active


# --------------------------------------------------------------------------- variants


def test_two_candidates_in_one_batch_correct_the_same_card_in_order(service, events):
    old = service.save("The deploy window is 14:00 on weekdays.", "constraint").card
    events.clear()
    consolidator = _consolidator(service, events)
    first, second = consolidator.run(
        [
            _candidate("The deploy window is now 15:00 on weekdays."),
            _candidate("The deploy window moved to 16:00 on weekdays."),
        ]
    )
    assert consolidator.model_calls == 0 and [kind for kind, _ in events] == ["rule", "rule"]
    assert (first.action, second.action) == ("UPDATE", "UPDATE")
    assert service.get(old.id).superseded_by == first.card_id
    assert service.get(first.card_id).superseded_by == second.card_id
    assert [c.content for c in service.list()] == ["The deploy window moved to 16:00 on weekdays."]


def test_a_restatement_of_an_earlier_candidate_of_the_batch_is_one_card(service, events):
    consolidator = _consolidator(service, events)
    first, second = consolidator.run(
        [
            _candidate("The project lints Python code with ruff."),
            _candidate("The project lints its Python code with ruff."),
        ]
    )
    assert consolidator.model_calls == 0 and len(events) == 2
    assert (first.action, second.action, second.target_id) == ("ADD", "NOOP", first.card_id)
    assert [c.id for c in service.list()] == [first.card_id]


def test_a_held_correction_is_judged_once_and_waits_for_review(service, events, history, paths):
    old = service.save("The coverage threshold is 80%.", "constraint").card
    (old_file,) = list(paths.memory.rglob(f"{old.id}.md"))
    before = old_file.read_bytes()
    events.clear()
    consolidator = _consolidator(service, events, hold_for_review=True)
    consolidator.record = lambda decision: history.append(
        {
            "kind": "pending",
            "card_id": decision.card_id,
            "action": decision.action,
            "target_id": decision.target_id,
            "content": decision.candidate.content,
        }
    )
    (decision,) = consolidator.run([_candidate("The coverage threshold is now 90%.")])
    assert consolidator.model_calls == 0 and [kind for kind, _ in events] == ["rule"]
    assert (decision.action, decision.target_id, decision.pending) == ("UPDATE", old.id, True)
    held = service.get(decision.card_id)
    assert held.status == "archived" and held.supersedes is None
    assert old_file.read_bytes() == before  # the card it corrects is not touched while it waits
    item = next(i for i in review_queue(service, history) if i.card.id == decision.card_id)
    approve(service, history, item)
    assert service.get(old.id).superseded_by == decision.card_id and service.get(decision.card_id).active


def test_a_tool_fact_the_model_would_add_never_replaces_the_users_card(service, events):
    """The rule reads it as a correction; a less trusted source never replaces a more trusted card
    — whether the rule or the model found the correction."""
    user_card = service.save("The project's Python version is 3.12.", "constraint", source="user").card
    consolidator = _consolidator(service, events, answer="ADD")
    (decision,) = consolidator.run([_candidate("The project's Python version is 3.11.", "constraint", source="tool")])
    assert decision.action == "NOOP" and "more trusted source" in decision.reason
    assert service.get(user_card.id).active and service.get(user_card.id).superseded_by is None
    assert [c.id for c in service.list()] == [user_card.id]


def test_an_imported_correction_chain_is_judged_once_per_card(service, open_service, events):
    now = utc_now()
    texts = [
        "The nightly backup runs at 01:00.",
        "The nightly backup runs at 02:00 now.",
        "The nightly backup runs at 03:00 now.",
    ]
    records = [
        {
            "content": text,
            "memory_type": "fact",
            "scope": "project",
            "created_at": (now + timedelta(minutes=i)).isoformat(),
        }
        for i, text in enumerate(texts)
    ]
    report = service.import_cards(records)
    assert report.added == 3 and report.superseded == 2
    assert [content for _, content in events] == texts
    service.close()
    again = open_service("s2")  # a new process syncs the store: nothing arrives to be judged again
    assert [c.content for c in again.list()] == [texts[-1]]
    assert len(events) == 3
