"""Card files are the source of truth: hand edits, deletions, a lost or damaged index, bad front
matter, a git clone, several processes at once — all with real files and a real Chroma index."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import pytest

from memagent.config import Settings, project_paths
from memagent.memory.errors import MemoryUnavailable


def _every_scan(service):
    for store in service.core.stores.values():
        store.full_scan_interval = 0.0
    return service


def test_a_card_file_is_readable_markdown_with_front_matter(service, paths):
    card = service.save("Use ruff for linting", "decision", confidence=0.9, files=["pyproject.toml"]).card
    text = (paths.memory / "cards" / f"{card.id}.md").read_text()
    head, body = text.split("\n---\n", 1)
    assert head.startswith("---\n") and f"id: {card.id}" in head and "memory_type: decision" in head
    assert "- pyproject.toml" in head and body == "Use ruff for linting\n"
    assert (paths.memory / "local" / ".gitignore").read_text().splitlines()[-1] == "*"  # all local stays out of git
    assert not (paths.memory / ".gitignore").exists()


def test_hand_edit_and_hand_delete_are_seen_by_the_next_search(service, paths):
    _every_scan(service)
    card = service.save("The staging database is called blue-otter", "fact").card
    other = service.save("Invoices are generated on the first of the month", "fact").card
    path = paths.memory / "cards" / f"{card.id}.md"
    path.write_text(path.read_text().replace("blue-otter", "green-heron"))  # edited in place
    hits = service.search("what is the staging database called?", k=1)
    assert hits[0].card.id == card.id and "green-heron" in hits[0].card.content
    assert service.search("green heron", k=1)[0].card.id == card.id  # the lexical index follows too
    (paths.memory / "cards" / f"{other.id}.md").unlink()
    assert other.id not in {h.card.id for h in service.search("when are invoices generated?")}
    assert service.get(other.id) is None


def test_a_deleted_index_is_rebuilt_from_the_files(open_service, paths):
    first = open_service()
    card = first.save("Feature flags are stored in Unleash", "fact").card
    first.close()
    shutil.rmtree(paths.memory / "local" / "index")
    second = open_service()
    assert [h.card.id for h in second.search("where do feature flags live?", k=1)] == [card.id]
    assert (paths.memory / "local" / "index" / "chroma.sqlite3").exists()


def test_bad_front_matter_is_named_and_skipped(service, paths):
    _every_scan(service)
    good = service.save("The on-call handbook lives in the wiki", "fact").card
    broken = paths.memory / "cards" / "m_0123456789ab.md"
    broken.write_text("---\nid: m_0123456789ab\nconfidence: [unclosed\n---\nSomething\n")
    wrong = paths.memory / "cards" / "m_aaaaaaaaaaaa.md"
    wrong.write_text("---\nid: m_aaaaaaaaaaaa\nconfidence: 7\n---\nBroken confidence\n")
    assert [h.card.id for h in service.search("where is the on-call handbook?", k=1)] == [good.id]
    notices = service.notices()
    assert any(str(broken) in n and "bad front matter" in n for n in notices)
    assert any(str(wrong) in n and "confidence" in n for n in notices)
    assert [c.id for c in service.list()] == [good.id]


def test_a_git_clone_of_committed_cards_works_after_the_index_builds(open_service, paths, tmp_path):
    if shutil.which("git") is None:
        pytest.fail("git is needed for this test")
    service = open_service()
    card = service.save("Releases are tagged vX.Y.Z on main", "procedure").card
    private = service.save("My local checkout uses a venv in .venv", "fact", private=True).card
    service.close()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", str(paths.root)], check=True)
    subprocess.run([*git, "-C", str(paths.root), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(paths.root), "commit", "-qm", "cards"], check=True)
    tracked = subprocess.run(["git", "-C", str(paths.root), "ls-files"], capture_output=True, text=True).stdout
    assert f".memory/cards/{card.id}.md" in tracked and "index/" not in tracked and private.id not in tracked
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(paths.root), str(clone)], check=True)
    cloned = open_service(paths=project_paths(clone))
    assert [h.card.id for h in cloned.search("how are releases tagged?", k=1)] == [card.id]
    assert cloned.get(private.id) is None

    report = cloned.forget_report([card.id])  # the file is tracked: git still has it
    assert report.erased == [card.id] and [p.name for p in report.tracked] == [f"{card.id}.md"]


WRITER = """
import sys
from memagent.config import Settings, project_paths
from memagent.embedding.embedders import load_embedder
from memagent.memory.service import MemoryService
from pathlib import Path
import random
root, tag, count, cache = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
words = ("parser cache router deploy worker queue index auth billing search invoice plugin theme shell "
         "config bucket proxy kafka redis celery django react webpack nginx grafana sentry pytest docker "
         "helm terraform ansible postgres sqlite rust golang kotlin swift piano garden river mountain coffee "
         "violin harbor lantern meadow glacier canyon orchard falcon otter heron maple cedar").split()
rng = random.Random(tag)
service = MemoryService.open(project_paths(root), Settings(memory_lock_wait=120), tag,
                             embedder=load_embedder("onnx", cache_dir=cache))
for i in range(count):
    text = f"Note {tag}{i}: " + " ".join(rng.sample(words, 7))
    result = service.save(text, "fact")
    assert result.status in ("added", "duplicate"), result
    print(result.status)
service.close()
"""


def test_two_processes_writing_at_once_lose_nothing(paths, open_service, onnx_cache):
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(paths.root), tag, "100", str(onnx_cache)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("a", "b")
    ]
    added = 0
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        added += out.split().count("added")
    assert added >= 190  # random word salads are rarely near-duplicates of each other
    service = open_service()
    assert len(list((paths.memory / "cards").glob("m_*.md"))) == added
    assert service.stats()["active"] == added
    service.search("which port does the service listen on")
    store = service.core.stores["project"]
    assert store.vectors is not None and store.vectors.counts() == (added, 0)
    assert store.catalog.pending_vectors() == 0


FOREIGN = """
import sys
from memagent.config import Settings, project_paths
from memagent.embedding.embedders import load_embedder
from memagent.memory.service import MemoryService
from pathlib import Path
service = MemoryService.open(project_paths(sys.argv[1]), Settings(), "other",
                             embedder=load_embedder("onnx", cache_dir=Path(sys.argv[2])))
print(service.save("Production runs in the us-east-2 region", "fact").card.id)
service.close()
"""


def test_another_process_write_costs_one_reload_then_turns_are_fast(service, paths, onnx_cache):
    """Regression: once another process wrote, every later turn reloaded Chroma and rebuilt the
    lexical catalog. Now: one reconnect, then nothing until the next foreign write."""
    service.save("The staging cluster runs in eu-west-1", "fact")
    assert service.search("where is staging hosted")
    store = service.core.stores["project"]
    out = subprocess.run(
        [sys.executable, "-c", FOREIGN, str(paths.root), str(onnx_cache)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    foreign = out.stdout.strip()
    hits = {h.card.id: h for h in service.search("which region hosts production?")}
    assert foreign in hits and hits[foreign].parts["dense"] > 0.5
    assert store.reloads == 1
    store.full_scan_interval = 3600.0  # as in a big store: only folder stamps are checked
    timings = []
    for _ in range(5):
        started = time.perf_counter()
        service.search("which region hosts production?")
        timings.append(time.perf_counter() - started)
    assert store.reloads == 1 and store.sync_files() == 0
    assert sorted(timings)[2] < 1.0


def test_a_locked_store_fails_fast_with_one_line(paths, embedder):
    from filelock import FileLock

    service = __import__("memagent.memory.service", fromlist=["MemoryService"]).MemoryService.open(
        paths, Settings(memory_lock_wait=0.5), "s", embedder=embedder
    )
    service.save("Something worth keeping about the build", "fact")
    holder = FileLock(str(paths.memory / "local" / "index" / ".lock"))
    holder.acquire()
    try:
        started = time.monotonic()
        with pytest.raises(MemoryUnavailable) as info:
            service.save("Another thing worth keeping about deploys", "fact")
        assert time.monotonic() - started < 5
        assert "busy in another memagent process" in str(info.value) and "\n" not in str(info.value)
    finally:
        holder.release()
        service.close()


def test_forget_leaves_no_byte_under_the_store_or_home(service, paths, files_containing):
    marker = "Quetzal-lantern-5521"
    card = service.save(f"The vault codename is {marker} for the Q3 audit", "fact").card
    service.note_citations(f"[Memory#{card.id}]")
    assert service.search("vault codename")
    assert files_containing(marker.encode(), paths.memory)
    assert service.forget([card.id]) == 1
    service.close()
    assert files_containing(marker.encode(), paths.memory, paths.home) == []
    assert files_containing(b"quetzal", paths.memory, paths.home) == []  # nor its index terms
    tombstones = [json.loads(x) for x in (paths.memory / "local" / "tombstones.jsonl").read_text().splitlines()]
    assert [t["id"] for t in tombstones] == [card.id]


def test_a_merge_that_leaves_two_cards_saying_the_same_is_offered_for_merging(service, paths):
    _every_scan(service)
    mine = service.save("Integration tests need a running Postgres container", "procedure").card
    theirs = mine.model_copy(
        update={"id": "m_00000000beef", "content": "Integration tests need a Postgres container running"}
    )
    from memagent.memory.cardfiles import render

    (paths.memory / "cards" / "m_00000000beef.md").write_text(render(theirs))  # as a git merge brings it
    service.search("what do integration tests need?")
    pairs = service.near_duplicates()
    assert [(a, b) for a, b, _ in pairs] == [tuple(sorted((mine.id, theirs.id)))]
    assert service.merge_near_duplicate(mine.id, theirs.id)
    assert service.get(theirs.id).status == "superseded" and service.near_duplicates() == []
    assert [h.card.id for h in service.search("what do integration tests need?")] == [mine.id]


def test_a_store_of_an_earlier_version_is_migrated_to_card_files(paths, open_service, embedder):
    import chromadb

    from memagent.memory.cards import MemoryCard

    old = MemoryCard(content="The legacy store kept this card inside Chroma", memory_type="fact")
    client = chromadb.PersistentClient(path=str(paths.memory), settings=chromadb.Settings(anonymized_telemetry=False))
    for kind in ("active", "inactive"):
        collection = client.get_or_create_collection(f"memagent_{kind}", embedding_function=None)
    client.get_collection("memagent_active", embedding_function=None).add(
        ids=[old.id],
        documents=[old.content],
        metadatas=[old.to_metadata()],
        embeddings=[embedder.embed([old.content])[0].tolist()],
    )
    del client, collection
    service = open_service()
    assert (paths.memory / "cards" / f"{old.id}.md").is_file()
    assert not (paths.memory / "chroma.sqlite3").exists()
    assert [h.card.id for h in service.search("what did the legacy store keep?", k=1)] == [old.id]
    assert any("migrated 1 memory cards" in n for n in service.notices())
