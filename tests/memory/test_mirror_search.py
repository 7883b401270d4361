"""Searches read the vector index's int8 mirror, so answering a question loads no Chroma; the
mirror follows every write, by this process or another, and an erasure leaves nothing in it."""

from __future__ import annotations

import json
import subprocess
import sys

from memagent.memory.cardfiles import INDEX_DIR
from memagent.memory.flat_mirror import MIRROR_FILE, FlatMirror, MirrorEmbedder, committed_generation
from memory.script_runs import run_script, tagged

# Runs the real CLI and says whether chromadb was imported and whether Chroma's client was made.
WHAT_LOADED = """
import atexit, json, runpy, sys
atexit.register(lambda: sys.stderr.write("\\nLOADED " + json.dumps(
    {"chromadb": "chromadb" in sys.modules, "client": "chromadb.api.rust" in sys.modules}) + "\\n"))
sys.argv = ["memagent", *sys.argv[1:]]
runpy.run_module("memagent", run_name="__main__")
"""


def _mirror_path(paths):
    return paths.memory / INDEX_DIR / MIRROR_FILE


def _mirror_of(store) -> FlatMirror:
    info = store.vectors.embedder
    mirror = FlatMirror(store.location.path, MirrorEmbedder(info.model_id, info.name, info.dim))
    assert mirror.load(store.catalog.generation())
    return mirror


def _chroma_ids(store) -> tuple[set[str], set[str]]:
    _, active, inactive = store.vectors._parts()
    return set(active.get(include=[])["ids"]), set(inactive.get(include=[])["ids"])


def test_a_search_in_a_new_process_reads_the_mirror_and_loads_no_chroma(stocked, cli_env):
    out = run_script(WHAT_LOADED, stocked.root, cli_env, "memory", "search", "which tests must pass before a deploy?")
    assert tagged(out.stderr, "LOADED") == {"chromadb": False, "client": False}
    assert out.stdout.splitlines()[0].endswith("The parser tests must pass before any deploy")


def test_a_question_in_print_mode_loads_no_chroma(stocked, cli_env):
    out = run_script(WHAT_LOADED, stocked.root, cli_env, "-p", "when do deploys go out?")
    assert tagged(out.stderr, "LOADED") == {"chromadb": False, "client": False}
    assert "Done." in out.stdout


def _ranked(out) -> list[tuple[str, float]]:
    return [(hit["card"]["id"], round(hit["score"], 2)) for hit in json.loads(out.stdout)]


def test_a_missing_mirror_is_rebuilt_from_chroma_and_ranks_the_same(stocked, cli_env):
    question = ["memory", "search", "which tests must pass before a deploy?", "--json"]
    with_mirror = _ranked(run_script(WHAT_LOADED, stocked.root, cli_env, *question))
    _mirror_path(stocked).unlink()
    rebuilt = run_script(WHAT_LOADED, stocked.root, cli_env, *question)
    assert tagged(rebuilt.stderr, "LOADED")["client"] is True  # Chroma answered and rebuilt the mirror
    assert _ranked(rebuilt) == with_mirror and len(with_mirror) == 2
    assert committed_generation(_mirror_path(stocked)) is not None
    again = run_script(WHAT_LOADED, stocked.root, cli_env, *question)
    assert tagged(again.stderr, "LOADED")["chromadb"] is False and _ranked(again) == with_mirror


def test_another_processs_card_reaches_a_warm_session_without_chroma(open_service, paths, cli_env):
    service = open_service()
    service.save("Deploys go out on Tuesdays after the standup", "procedure")
    service.close()
    warm = open_service(check_embedder=False)
    assert warm.search("when do deploys go out?")[0].card.content.startswith("Deploys go out")
    store = warm.core.stores["project"]
    assert store.vectors.mirror_ready and store.vectors._active is None
    added = subprocess.run(
        [
            sys.executable,
            "-m",
            "memagent",
            "memory",
            "add",
            "Release freezes start the Friday before a launch",
            "--type",
            "constraint",
            "-C",
            str(paths.root),
        ],
        env={**cli_env, "MEMAGENT_HOME": str(paths.home), "MEMAGENT_EMBEDDER": "onnx"},  # the fixture's embedder
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert added.returncode == 0, added.stderr
    hits = warm.search("when does the release freeze begin?")
    assert hits[0].card.content == "Release freezes start the Friday before a launch"
    assert store.vectors._active is None, "the other process's write was read from the mirror"


def test_the_mirror_holds_what_chroma_holds_after_saves_corrections_and_forgets(open_service):
    service = open_service()
    kept = service.save("The staging cluster runs in eu-west-1", "fact").card
    old = service.save("The API rate limit is 100 requests per minute", "fact").card
    service.save("The API rate limit is 500 requests per minute, since the March upgrade", "fact", supersedes=old.id)
    gone = service.save("The on-call rotation changes every Monday", "fact").card
    service.forget([gone.id])
    store = service.core.stores["project"]
    held = _mirror_of(store).held()
    active, inactive = _chroma_ids(store)
    assert {i for i, a in held.items() if a} == active
    assert {i for i, a in held.items() if not a} == inactive == {old.id}
    assert kept.id in active and gone.id not in active | set(held)


def test_a_forgotten_card_leaves_no_byte_in_the_mirror(open_service, paths):
    service = open_service()
    service.save("Deploys go out on Tuesdays after the standup", "procedure")
    secret = service.save("The vendor contract renews on 2027-03-01 with a 9% uplift", "fact").card
    assert secret.id.encode() in _mirror_path(paths).read_bytes()
    assert _mirror_path(paths).stat().st_mode & 0o777 == 0o600  # vectors of private cards too
    service.forget([secret.id])
    data = _mirror_path(paths).read_bytes()
    assert secret.id.encode() not in data
    assert secret.id not in [hit.card.id for hit in service.search("when does the vendor contract renew?", k=5)]


def test_a_card_forgotten_from_the_cli_leaves_no_byte_in_the_mirror(stocked, cli_env):
    listed = run_script(WHAT_LOADED, stocked.root, cli_env, "memory", "list", "--json").stdout
    card_id = next(c["id"] for c in json.loads(listed) if "parser tests" in c["content"])
    run_script(WHAT_LOADED, stocked.root, cli_env, "memory", "forget", card_id, "--yes")
    mirror = _mirror_path(stocked)
    assert not mirror.exists() or card_id.encode() not in mirror.read_bytes()
    found = run_script(WHAT_LOADED, stocked.root, cli_env, "memory", "search", "which tests must pass?", "--json")
    assert card_id not in found.stdout


def test_a_write_that_bypassed_the_mirror_is_never_answered_from_it(open_service):
    """An index written by a process that does not keep the mirror (an older memagent): the
    catalog's generation moved past the mirror's, so the next search rebuilds it from Chroma."""
    service = open_service()
    first = service.save("Deploys go out on Tuesdays after the standup", "procedure").card
    second = service.save("Feature flags live in config/flags.yaml", "fact").card
    store = service.core.stores["project"]
    moved = store.vectors.vectors([first.id])[first.id]
    store.vectors._mirror = None  # this process stops keeping the mirror, as older code would
    _, active, _ = store.vectors._parts()
    active.upsert(ids=[second.id], embeddings=[moved])  # the second card now has the first's vector
    with store.catalog.transaction() as db:
        store.catalog.bump_generation(db)
    service.close()
    fresh = open_service(check_embedder=False)
    fresh.search("when do deploys go out?", k=2)
    mirror = _mirror_of(fresh.core.stores["project"])
    a, b = mirror.vector_of(first.id), mirror.vector_of(second.id)
    assert float(a @ b) > 0.99, "the mirror still held the vector the other writer replaced"


def test_a_session_whose_mirror_went_stale_rebuilds_it_and_reads_it_again(open_service):
    service = open_service()
    first = service.save("Deploys go out on Tuesdays after the standup", "procedure").card
    second = service.save("Feature flags live in config/flags.yaml", "fact").card
    warm = open_service(check_embedder=False)
    warm.search("when do deploys go out?")
    warm_store = warm.core.stores["project"]
    assert warm_store.vectors.mirror_ready
    store = service.core.stores["project"]  # the other session turns into a writer without the mirror
    moved = store.vectors.vectors([first.id])[first.id]
    store.vectors._mirror = None
    _, active, _ = store.vectors._parts()
    active.upsert(ids=[second.id], embeddings=[moved])
    with store.catalog.transaction() as db:
        store.catalog.bump_generation(db)
    warm.search("where do feature flags live?")
    assert warm_store.vectors.mirror_ready, "the stale mirror was not rebuilt"
    held = warm_store.vectors._mirror
    assert float(held.vector_of(first.id) @ held.vector_of(second.id)) > 0.99


def test_a_planted_mirror_can_only_mis_rank_never_invent_a_card(open_service, paths):
    """A repository can force-add a git-ignored file: a mirror naming cards that do not exist,
    with vectors made to match any question, is committed at the catalog's generation."""
    service = open_service()
    real = service.save("Deploys go out on Tuesdays after the standup", "procedure").card
    store = service.core.stores["project"]
    planted = FlatMirror(store.location.path, store.vectors._mirror.embedder)
    question = service.core.embed(["when do deploys go out?"])[0]
    planted.replace(
        [(real.id, question, True), ("m_planted00001", question, True), ("../../etc/passwd", question, True)],
        store.catalog.generation(),
    )
    service.close()
    fresh = open_service(check_embedder=False)
    hits = fresh.search("when do deploys go out?", k=5)
    assert [hit.card.id for hit in hits] == [real.id]
    assert fresh.search("something unrelated entirely", k=5) is not None


def test_a_full_disk_while_writing_the_mirror_loses_no_card(open_service, monkeypatch):
    import errno

    from memagent.memory import flat_mirror

    service = open_service()
    service.save("Deploys go out on Tuesdays after the standup", "procedure")

    def full(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(flat_mirror.FlatMirror, "_append", full)
    saved = service.save("Feature flags live in config/flags.yaml", "fact").card
    monkeypatch.undo()
    store = service.core.stores["project"]
    assert not store.vectors.mirror_ready, "a mirror that missed a write must not be read"
    service.close()
    fresh = open_service(check_embedder=False)
    assert fresh.search("where do feature flags live?", k=1)[0].card.id == saved.id
    assert fresh.core.stores["project"].vectors.mirror_ready  # rebuilt from Chroma by that search


def test_two_processes_writing_at_once_leave_a_mirror_equal_to_chroma(open_service, paths, cli_env):
    """Saves from two CLI processes at the same time and from this process in between: the
    mirror read afresh holds exactly what Chroma holds."""
    env = {**cli_env, "MEMAGENT_HOME": str(paths.home), "MEMAGENT_EMBEDDER": "onnx"}
    service = open_service()
    service.save("The staging cluster runs in eu-west-1", "fact")
    writers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "memagent",
                "memory",
                "add",
                f"Worker {w} owns the {topic} pipeline, say the docs",
                "--type",
                "fact",
                "-C",
                str(paths.root),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w, topic in enumerate(["billing", "search", "ingest", "export"])
    ]
    service.save("Release freezes start the Friday before a launch", "constraint")
    for writer in writers:
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
    service.search("who owns the billing pipeline?")  # catches up with the other writers
    store = service.core.stores["project"]
    held = _mirror_of(store).held()
    active, inactive = _chroma_ids(store)
    assert {i for i, a in held.items() if a} == active and len(active) == 6
    assert {i for i, a in held.items() if not a} == inactive


def test_a_damaged_catalog_takes_the_mirror_with_it(open_service, paths):
    """The rebuilt catalog counts generations from zero again: a mirror committed under the
    old count (here with a row Chroma never held, committed far ahead) must not pass for
    current, so it goes with the damaged catalog."""
    service = open_service()
    card = service.save("Deploys go out on Tuesdays after the standup", "procedure").card
    service.save("Feature flags live in config/flags.yaml", "fact")
    store = service.core.stores["project"]
    stale = store.vectors._mirror
    stale.write([("m_000000stale1", service.core.embed(["when do deploys go out?"])[0], True)])
    stale.commit(10**6)
    service.close()
    (paths.memory / INDEX_DIR / "catalog.sqlite3").write_bytes(b"not a database at all" * 50)
    fresh = open_service(check_embedder=False)
    hits = fresh.search("when do deploys go out?", k=1)
    assert hits[0].card.id == card.id
    store = fresh.core.stores["project"]
    assert any("rebuilding it from the card files" in notice for notice in store.notices)
    assert b"m_000000stale1" not in _mirror_path(paths).read_bytes(), "the old mirror was kept"
    assert committed_generation(_mirror_path(paths)) == store.catalog.generation()


def test_a_search_while_the_store_is_busy_answers_from_chroma_without_waiting(open_service, paths):
    """Writing a missing mirror needs the store's lock; another process holding it (a long
    import) must not make a search wait for it, let alone fail."""
    import time

    from filelock import FileLock

    from memagent.config import Settings

    service = open_service()
    card = service.save("Deploys go out on Tuesdays after the standup", "procedure").card
    service.close()
    _mirror_path(paths).unlink()
    fresh = open_service(check_embedder=False, settings=Settings(memory_lock_wait=30))
    with FileLock(str(paths.memory / INDEX_DIR / ".lock")):  # another process's import
        started = time.monotonic()
        hits = fresh.search("when do deploys go out?", k=1)
        waited = time.monotonic() - started
    assert hits[0].card.id == card.id
    assert waited < 10, f"the search waited {waited:.1f} s for the lock"
    assert not _mirror_path(paths).exists()
    fresh.search("when do deploys go out?", k=1)
    assert _mirror_path(paths).exists(), "a later search writes the mirror once the lock is free"
