"""Forget erases: after forget the text is in no byte of any file under the store directories."""

from __future__ import annotations

import json

MARKER = "Zanzibar-quokka-7731"


def _save_marked(service, **kwargs):
    return service.save(
        f"The secret project codename is {MARKER} and the launch is in March",
        "fact",
        provenance={"turn": 2, "quote": f"codename {MARKER}"},
        **kwargs,
    ).card


def test_forget_erases_every_byte(service, paths, files_containing):
    keep = service.save("The office coffee machine is on the third floor", "fact").card
    old = _save_marked(service)
    new = service.correct(old.id, f"The project codename is {MARKER}; the launch moved to April").card
    service.save(f"The user calls the launch project {MARKER} too", "fact", "user")
    service.note_citations(f"[Memory#{new.id}]")  # an update record with the metadata
    assert service.search("project codename", k=3)
    needle = MARKER.encode()
    dirs = (paths.memory, paths.user_memory)
    assert files_containing(needle, *dirs), "the test must see the text on disk before forgetting"

    erased = service.forget([new.id])
    assert erased == 2  # the card and the older version it superseded
    assert service.get(new.id) is None and service.get(old.id) is None
    assert files_containing(needle, paths.memory) == []
    marked = [h.card for h in service.search(MARKER, k=5) if MARKER in h.card.content]
    assert len(marked) == 1 and marked[0].scope == "user"

    assert service.forget_scope("user") == 1
    assert files_containing(needle, *dirs) == []
    assert [h.card.id for h in service.search("coffee machine floor")] == [keep.id]

    tombstones = [json.loads(line) for line in (paths.memory / "local" / "tombstones.jsonl").read_text().splitlines()]
    assert {t["id"] for t in tombstones} == {old.id, new.id}
    assert all(set(t) == {"id", "forgotten_at"} for t in tombstones)


def test_forget_survives_reopen_and_store_keeps_working(open_service, paths, files_containing):
    service = open_service()
    card = _save_marked(service)
    assert service.forget([card.id]) == 1
    service.close()
    reopened = open_service()
    assert reopened.get(card.id) is None
    assert reopened.search("secret project codename") == []
    fresh = reopened.save("Nightly builds publish to the staging bucket", "fact").card
    assert [h.card.id for h in reopened.search("nightly builds staging")] == [fresh.id]
    assert files_containing(MARKER.encode(), paths.memory) == []


def test_forget_session_scope_only_touches_that_session(open_service, paths, files_containing):
    one = open_service("sess-1")
    two = open_service("sess-2")
    gone = one.save(f"Scratch note {MARKER} for this session", "context", "session").card
    kept = two.save("Scratch note about the CSV importer for this session", "context", "session").card
    assert one.forget_scope("session", "sess-1") == 1
    assert one.get(gone.id) is None and one.get(kept.id) is not None
    assert files_containing(MARKER.encode(), paths.memory) == []


def test_forget_all_and_unknown_ids(service, paths, files_containing):
    _save_marked(service)
    service.save(f"The user knows {MARKER}", "fact", "user")
    assert service.forget(["m_000000000000"]) == 0
    assert service.forget_all() == 2
    assert service.stats()["total"] == 0
    assert files_containing(MARKER.encode(), paths.memory, paths.user_memory) == []


def test_scrub_zeroes_uninitialised_hnsw_bytes(service, paths, files_containing):
    """Chroma writes the HNSW buffer's unused capacity to disk uninitialised (heap garbage);
    simulate garbage holding a card's text and check the scrub removes it and keeps the index."""
    from memagent.memory.chroma_files import scrub_hnsw_segments

    card = service.save("The on-call rotation changes every Monday", "fact").card
    index = paths.memory / "local" / "index"
    data_files = list(index.glob("*/data_level0.bin"))
    assert data_files
    for data in data_files:
        size = data.stat().st_size
        garbage = (b"\x01garbage " + MARKER.encode()) * 50
        with data.open("r+b") as fh:
            fh.seek(max(size - len(garbage), 0))
            fh.write(garbage[:size])
    assert files_containing(MARKER.encode(), paths.memory)
    assert scrub_hnsw_segments(index) >= 1
    assert files_containing(MARKER.encode(), paths.memory) == []
    assert scrub_hnsw_segments(index) == 0  # already clean: nothing rewritten
    service.close()
    assert [h.card.id for h in service.search("on-call rotation")] == [card.id]


def test_forget_after_the_index_flushed_to_disk(open_service, paths, files_containing):
    """Past Chroma's sync threshold (1000 records) the HNSW index and the log are flushed;
    erasure must still reach every byte, and the reopened store must still answer."""
    import numpy as np

    from memagent.memory.cards import MemoryCard
    from memagent.memory.vector_index import EmbedderInfo

    service = open_service()
    rng = np.random.default_rng(5)
    filler = [MemoryCard(content=f"Filler card number {i} about nothing in particular") for i in range(1100)]
    vectors = rng.standard_normal((len(filler), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = service.core.stores["project"]
    info = EmbedderInfo.of(service.embedder)
    store.write_many([(c, False, v) for c, v in zip(filler[:600], vectors[:600])], info, durable=False)
    marked = _save_marked(service)
    store.write_many([(c, False, v) for c, v in zip(filler[600:], vectors[600:])], info, durable=False)
    assert files_containing(MARKER.encode(), paths.memory)
    assert service.forget([marked.id]) == 1
    service.close()
    assert files_containing(MARKER.encode(), paths.memory) == []
    reopened = open_service()
    assert reopened.get(marked.id) is None
    assert reopened.stats()["active"] == 1100
    kept = reopened.save("The weekly sync moved to Thursdays", "fact").card
    assert reopened.search("weekly sync day")[0].card.id == kept.id
