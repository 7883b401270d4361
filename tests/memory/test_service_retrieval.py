"""How MemoryService feeds the ranker: a card's backstory in the lexical index (its vector
stays the content's), and provenance session/turn as the card's place for neighbour sharing,
both for cards written in this process and after the catalog is rebuilt from the store."""

from __future__ import annotations

from memagent.memory.lexical import tokenize


def _backstory_card(service):
    return service.save(
        "Tomorrow is going to be an awesome night, I cannot wait!",
        "event",
        confidence=0.9,
        person="Caroline",
        backstory="Melanie asked about the grand opening of the pottery studio",
        provenance={"session_id": "conv-1", "turn": 5},
    ).card


def test_backstory_words_find_the_card_that_does_not_say_them(service):
    card = _backstory_card(service)
    service.save("The bus to the city leaves at nine every morning.", "fact", confidence=0.9)
    assert not set(tokenize("pottery studio grand opening")) & set(tokenize(card.content))
    hits = service.search("When is the grand opening of the pottery studio?", k=3)
    assert hits and hits[0].card.id == card.id
    assert hits[0].parts["lexical"] > 0


def test_backstory_and_places_survive_a_catalog_rebuild(open_service):
    writer = open_service()
    card = _backstory_card(writer)
    writer.close()
    catalog_file = writer.core.stores["project"].catalog.path
    catalog_file.unlink()  # the catalog is rebuilt from the card files
    reader = open_service()
    reader.sync()
    catalog = reader.core.stores["project"].catalog
    entry = catalog.entries([card.id])[card.id]
    assert (entry.thread, entry.position) == ("conv-1", 5)
    assert card.id in dict(catalog.lexical("pottery studio", 5, True))
    hits = reader.search("grand opening of the pottery studio", k=1)
    assert hits[0].card.id == card.id


def test_neighbouring_turn_of_the_best_hit_is_lifted(service):
    """Two cards from adjacent turns of one session: the one that only answers gains from the
    one that names the topic; the same answer from another session does not."""
    asked = service.save(
        "Melanie: how did the pottery studio grand opening go last Friday?",
        "event",
        confidence=0.9,
        provenance={"session_id": "conv-1", "turn": 4},
    ).card
    answer = service.save(
        "Caroline: it was wonderful, so many people came to see it",
        "event",
        confidence=0.9,
        provenance={"session_id": "conv-1", "turn": 5},
    ).card
    stray = service.save(
        "Caroline: what a night, the band played for hours and everyone danced",
        "event",
        confidence=0.9,
        provenance={"session_id": "conv-2", "turn": 9},
    ).card
    assert len({asked.id, answer.id, stray.id}) == 3
    hits = {h.card.id: h for h in service.search("pottery studio grand opening", k=5, min_score=0)}
    assert asked.id in hits and answer.id in hits
    assert hits[answer.id].parts["neighbour"] > 0
    assert stray.id not in hits or hits[stray.id].parts["neighbour"] == 0.0
