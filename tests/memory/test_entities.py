"""Names, descriptions and roles learned from card text (memory.entities), and how a question
that describes instead of naming is understood."""

from __future__ import annotations

from memagent.memory.entities import EntityIndex, Mention, mentions_in
from memagent.memory.query import asks_for_person

CARDS = [
    "Harbor is our deploy CLI: a Go tool that builds images and rolls them out.",
    "Beacon is the notification service: it sends email, SMS and push.",
    "Quill is the collaborative document editor, built on ProseMirror.",
    "Tomás Ferreira owns Harbor and reviews every change to its rollout logic.",
    "Kenji Watanabe is the release manager for Harbor.",
    "Ask Rafael Moreno about Beacon's unsubscribe links.",
    "Email template changes are approved by Hana Sato.",
    "Sluice runs on Python 3.11 and pins pyarrow 15.",
    "Sluice is the ingestion pipeline for partner files.",
]


def _index() -> EntityIndex:
    return EntityIndex.of(m for text in CARDS for m in mentions_in(text))


def test_definitions_roles_and_asks_are_read_from_the_text():
    assert mentions_in(CARDS[0]) == [Mention("Harbor", "system", description="deploy CLI")]
    assert Mention("Kenji Watanabe", "person", role="release manager", topic="Harbor") in mentions_in(CARDS[4])
    assert Mention("Rafael Moreno", "person", role="ask", topic="Beacon's unsubscribe links") in mentions_in(CARDS[5])
    assert [m.name for m in mentions_in(CARDS[6])] == ["Hana Sato"]
    assert mentions_in("We run the tests with pytest before pushing.") == []


def test_a_defined_system_never_becomes_a_person():
    index = _index()
    assert set(index.systems) == {"Harbor", "Beacon", "Quill", "Sluice"}  # "Sluice runs on …" is no role
    assert "Sluice" not in index.people and "Kenji Watanabe" in index.people


def test_a_question_that_describes_a_system_is_understood_by_name():
    index = _index()
    deploy = index.understand("How do I compile the deploy CLI?")
    assert (
        deploy.described == {"Harbor"}
        and deploy.rewritten("How do I compile the deploy CLI?") == "How do I compile Harbor?"
    )
    assert "harbor" in deploy.lexical_query("How do I compile the deploy CLI?").lower()
    assert "cli" not in deploy.lexical_query("How do I compile the deploy CLI?").lower()  # the description gives way
    assert index.understand("Where are the notification service's templates?").described == {"Beacon"}
    assert index.understand("Who reviews changes to the editor's toolbar?").described == {"Quill"}
    assert index.understand("What does the deploy tool do on Fridays?").described == {"Harbor"}


def test_generic_words_alone_do_not_name_a_system():
    index = _index()
    assert index.understand("Which service sends the most email?").described == frozenset()
    assert index.understand("Is there a CLI for this?").described == frozenset()
    assert index.understand("Which editor do I use at home?").described == frozenset()  # no "the editor"


def test_a_role_in_the_question_adds_the_person_who_holds_it():
    index = _index()
    understood = index.understand("Who is the release manager of the deploy CLI?")
    assert understood.people == {"Kenji Watanabe"} and "Kenji Watanabe" in understood.names
    assert index.understand("Who is the release manager of Beacon?").people == frozenset()  # another topic


def test_questions_that_ask_for_a_person():
    for question in (
        "Who signs off on schema changes?",
        "whose approval do I need to ship?",
        "Which engineer owns the importer?",
        "Remind me who I should check with about keys",
    ):
        assert asks_for_person(question), question
    for question in ("How do I build it?", "What does the whole team use for lint?", "Where is who.json?"):
        assert not asks_for_person(question), question


def _large_index() -> EntityIndex:
    """A store with many names: 300 systems and 200 people, described and given roles."""
    heads = ["editor", "pipeline", "service", "backend", "tool", "dashboard", "scheduler", "gateway", "cli", "cache"]
    mods = ["billing", "ingestion", "deploy", "search", "docs", "payments", "metrics", "auth", "image", "mail"]
    roles = ["release manager", "owner", "lead", "on-call engineer", "reviewer"]
    mentions = [
        Mention(f"Sys{i}", "system", description=f"the {mods[i % 10]} {heads[(i // 10) % 10]}") for i in range(300)
    ]
    mentions += [
        Mention(f"Person{i}", "person", role=roles[i % 5], topic=f"Sys{i % 300} {mods[(i // 5) % 10]}")
        for i in range(200)
    ]
    return EntityIndex.of(mentions)


QUESTIONS = [
    "how do I restart the billing service?",
    "who is the release manager for the deploy tool?",
    "where does the ingestion pipeline write?",
    "what port does the docs editor use?",
    "who owns the payments backend?",
    "is the metrics dashboard down?",
    "what does Sys12 do?",
    "who should review changes to the auth gateway?",
    "how big is the image cache?",
    "what time is it?",
    "who is on call for the mail scheduler this week?",
    "the search cli crashes on start",
]


def test_skipping_descriptions_that_cannot_match_changes_no_understanding(monkeypatch):
    """A question is compared in full only with descriptions and roles whose head shares its
    first letters with one of its words: the same understanding as comparing with every one."""
    from memagent.memory import entities

    index = _large_index()
    filtered = {q: index.understand(q) for q in QUESTIONS}
    calls = []
    real = entities._describes
    monkeypatch.setattr(entities, "_describes", lambda *a: calls.append(a) or real(*a))
    for question in QUESTIONS:
        index.understand(question)
    compared = len(calls)
    calls.clear()
    monkeypatch.setattr(entities, "_may_describe", lambda *a: True)
    monkeypatch.setattr(EntityIndex, "_role_named", lambda *a: True)
    everything = {q: index.understand(q) for q in QUESTIONS}
    assert filtered == everything
    assert any(u.described for u in filtered.values()) and any(u.people for u in filtered.values())
    assert compared * 3 < len(calls)  # most descriptions are never compared in full
