"""`memory import` pays per batch, not per card: the provenance ledger is written in one
transaction per batch, the store's side of every card's neighbours is one vector-index query per
batch, and an import interrupted mid-batch loses no card it reported and leaves no half-written
card file. The correction rule still sees, for each card, the store and the cards before it in
the same file, in order."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from memagent.memory import transfer
from memagent.memory.cardfiles import CardFiles
from memagent.memory.errors import MemoryUnavailable
from memagent.memory.provenance import LEDGER_FILE, Ledger
from memagent.memory.vector_index import VectorIndex

FACTS = [
    "The billing service retries failed webhooks three times with exponential backoff.",
    "Frontend builds use Vite; the dev server listens on port 5173.",
    "Database migrations are written with Alembic and live in db/migrations.",
    "The nightly ETL job loads partner data into the warehouse at 02:00 UTC.",
    "Feature flags are read from LaunchDarkly at start-up and cached for five minutes.",
    "Integration tests need a running Redis; docker compose up redis starts one.",
    "Release notes are generated from conventional commit messages by git-cliff.",
    "The mobile app talks to the API through a GraphQL gateway written in Go.",
    "Secrets are stored in Vault; CI reads them through short-lived AppRole tokens.",
    "Log lines are JSON with a trace_id field so Grafana can link them to traces.",
]


def _records(texts: list[str]) -> list[dict]:
    return [{"content": text, "memory_type": "fact"} for text in texts]


@pytest.fixture
def ledger_statements(monkeypatch) -> list[str]:
    """Every SQL statement the provenance ledger runs, in order."""
    seen: list[str] = []
    connect = Ledger._connect

    def traced(self: Ledger, create: bool) -> sqlite3.Connection | None:
        db = connect(self, create)
        if db is not None:
            db.set_trace_callback(seen.append)
        return db

    monkeypatch.setattr(Ledger, "_connect", traced)
    return seen


def _transactions(statements: list[str]) -> tuple[int, int]:
    """(transactions opened, ledger rows inserted outside any transaction)."""
    opened, loose, inside = 0, 0, False
    for statement in statements:
        verb = statement.split()[0].upper()
        if verb == "BEGIN":
            opened, inside = opened + 1, True
        elif verb in ("COMMIT", "ROLLBACK"):
            inside = False
        elif verb == "INSERT" and not inside:
            loose += 1
    return opened, loose


def test_an_import_writes_the_ledger_in_one_transaction_per_batch(service, paths, monkeypatch, ledger_statements):
    monkeypatch.setattr(transfer, "IMPORT_BATCH", 4)
    report = service.import_cards(_records(FACTS))
    assert report.added == len(FACTS)
    assert _transactions(ledger_statements) == (3, 0)  # 10 cards in batches of 4
    assert sum(s.upper().startswith("INSERT") for s in ledger_statements) == len(FACTS)
    # every file was recorded: each card stands as imported, none reads as "from the repository"
    assert {c.source for c in service.list()} == {"import"}


def test_a_single_save_records_its_card_in_one_transaction_too(service, ledger_statements):
    saved = service.save("The staging cluster runs in eu-west-1.", "fact").card
    assert _transactions(ledger_statements) == (1, 0)
    assert service.get(saved.id).source == "assistant"  # earned: not downgraded to repository


def test_a_ledger_that_cannot_be_written_leaves_no_card_file(service, paths, monkeypatch):
    """The ledger is written before the files: a card file never exists without its row."""

    def broken(self: Ledger, rows) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(Ledger, "record_many", broken)
    with pytest.raises(MemoryUnavailable, match="disk I/O error"):
        service.import_cards(_records(FACTS[:3]))
    cards = paths.memory / "cards"
    assert not cards.exists() or not any(cards.iterdir())


@pytest.fixture
def chroma_queries(monkeypatch) -> list[int]:
    """The number of query vectors of each vector-index query made (Chroma or its mirror)."""
    made: list[int] = []
    query = VectorIndex.nearest_ids_many

    def counted(self, vectors, *args, **kwargs):
        made.append(len(vectors))
        return query(self, vectors, *args, **kwargs)

    monkeypatch.setattr(VectorIndex, "nearest_ids_many", counted)
    return made


def test_an_import_queries_the_vector_index_once_per_batch(service, monkeypatch, chroma_queries):
    service.save("Deploys go through ArgoCD; the app of apps lives in infra/argocd.", "fact")  # an index exists
    chroma_queries.clear()
    monkeypatch.setattr(transfer, "IMPORT_BATCH", 4)
    report = service.import_cards(_records(FACTS))
    assert report.added == len(FACTS)
    assert chroma_queries == [4, 4, 2]


def test_a_restatement_of_an_earlier_card_of_the_same_batch_is_a_duplicate(service, chroma_queries):
    report = service.import_cards(
        _records(
            [
                FACTS[0],
                FACTS[1],
                "The billing service retries failed webhooks three times, with exponential backoff.",
            ]
        )
    )
    assert (report.added, report.duplicates) == (2, 1)
    assert chroma_queries == []  # a new store: no index to ask yet


def test_a_card_is_judged_against_the_batch_before_it_and_the_batches_written_before(service, monkeypatch):
    """Batches of 2: the correction (record 3) meets the fact it corrects (record 1) in the
    store, written by the first batch; the restatement (record 4) meets record 3 in its own
    batch, in file order."""
    monkeypatch.setattr(transfer, "IMPORT_BATCH", 2)
    records = [
        {"content": "The nightly partner import runs at 02:00 UTC.", "created_at": "2026-02-01T10:00:00Z"},
        {"content": FACTS[1], "created_at": "2026-02-02T10:00:00Z"},
        {
            "content": "The nightly partner import now runs at 04:30 UTC instead of 02:00.",
            "created_at": "2026-05-01T10:00:00Z",
        },
        {
            "content": "The nightly partner import now runs at 04:30 UTC, instead of 02:00.",
            "created_at": "2026-05-02T10:00:00Z",
        },
    ]
    report = service.import_cards(records)
    assert (report.added, report.duplicates, report.superseded) == (3, 1, 1)
    by_content = {c.content: c for c in service.list(include_all=True)}
    old, new = by_content[records[0]["content"]], by_content[records[2]["content"]]
    assert old.status == "superseded" and old.superseded_by == new.id
    assert new.status == "active" and new.supersedes == old.id


INTERRUPTED_IMPORT = textwrap.dedent(
    """
    import json, os, signal, sys
    from pathlib import Path
    from memagent.config import Settings, project_paths
    from memagent.memory import cardfiles, transfer
    from memagent.embedding.embedders import load_embedder
    from memagent.memory.service import MemoryService

    root, cache, records = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
    transfer.IMPORT_BATCH = 3
    reported = []
    write = cardfiles.atomic_write

    def dying_write(path, data, **kwargs):
        if len(reported) == 1 and sum(1 for _ in path.parent.glob("m_*.md")) == 4:
            # half of the fifth card's bytes, then the process is killed in the middle of a write
            with open(path.parent / f".{path.name}.partial.tmp", "wb") as fh:
                fh.write(data[: len(data) // 2])
            os.kill(os.getpid(), signal.SIGKILL)
        write(path, data, **kwargs)

    cardfiles.atomic_write = dying_write

    def progress(done, total):
        reported.append(done)
        print("reported", done, flush=True)

    service = MemoryService.open(project_paths(root), Settings(), "s", embedder=load_embedder("onnx", cache_dir=cache))
    service.import_cards(records, progress=progress)
    """
)


def test_an_import_killed_mid_batch_keeps_every_reported_card_and_no_half_file(
    paths, onnx_cache, open_service, isolated_env
):
    records = _records(FACTS[:9])
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_IMPORT, str(paths.root), str(onnx_cache), json.dumps(records)],
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    assert done.stdout.split() == ["reported", "3"]  # the first batch was reported, then the kill
    files = CardFiles(paths.memory)
    on_disk = [files.read_with_bytes(path)[0] for path in (paths.memory / "cards").glob("*.md")]  # all parse
    assert 3 <= len(on_disk) <= 4  # the first batch, and the card written before the kill
    reopened = open_service("s2")
    kept = {c.content: c for c in reopened.list()}
    assert set(FACTS[:3]) <= set(kept)  # every reported card is there
    assert {c.source for c in kept.values()} == {"import"}  # and earned: its ledger row was written first
    leftovers = [p.name for p in (paths.memory / "cards").iterdir() if not p.name.endswith(".md")]
    assert all(name.startswith(".") for name in leftovers)  # a killed write's temporary file is hidden
    assert (isolated_env / LEDGER_FILE).exists()
    # the rest imports again: what was written is a duplicate, not a second copy
    again = reopened.import_cards(records)
    assert again.added + again.duplicates == len(records)
    assert len(reopened.list()) == len(records)


def test_a_lexical_store_still_finds_restatements_of_stored_cards_in_a_batch(
    open_service, lexical_embedder, monkeypatch, chroma_queries
):
    """Without vectors the stored neighbours come from the catalog's terms, card by card, in the
    same batched lookup: no vector query is made, and a restatement is still a duplicate."""
    service = open_service("s", embedder=lexical_embedder)
    service.save(FACTS[2], "fact")
    monkeypatch.setattr(transfer, "IMPORT_BATCH", 2)
    report = service.import_cards(_records([FACTS[3], FACTS[2], FACTS[4]]))
    assert (report.added, report.duplicates) == (2, 1)
    assert chroma_queries == []
    assert sorted(c.content for c in service.list()) == sorted([FACTS[2], FACTS[3], FACTS[4]])
