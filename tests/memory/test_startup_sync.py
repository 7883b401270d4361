"""Start-up that does not scan: the search path never stamps every card file of a large store,
yet hand edits, pulls and checkouts are seen — by the folder listings and git at once, and an
edit in place (which moves no folder time) by the background full scan."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from memagent.config import project_paths
from memagent.memory import store as card_store
from memagent.memory.cardfiles import CardFiles, render


@pytest.fixture
def large(monkeypatch):
    """Treat every store as a large one (the inline scan is for stores of a few ms)."""
    monkeypatch.setattr(card_store, "INLINE_SCAN_MAX", 2)


@pytest.fixture
def scans(monkeypatch):
    """Count full stamp scans (``CardFiles.scan``)."""
    calls = []
    real = CardFiles.scan

    def counting(self):
        calls.append(self.root)
        return real(self)

    monkeypatch.setattr(CardFiles, "scan", counting)
    return calls


def _cards(service, n=4):
    texts = [
        "The staging database is called blue-otter",
        "Invoices are generated on the first of the month",
        "Deploys go out on Tuesdays after the standup",
        "The API listens on port 8443 in production",
    ]
    return [service.save(texts[i], "fact").card for i in range(n)]


def _edit_in_place(path, old, new):
    """Rewrite a file's bytes in place (same inode, folder time unchanged), as some editors do."""
    folder_before = path.parent.stat().st_mtime_ns
    data = path.read_text().replace(old, new)
    with open(path, "r+", encoding="utf-8") as fh:
        fh.write(data)
        fh.truncate()
    os.utime(path.parent, ns=(folder_before, folder_before))
    assert path.parent.stat().st_mtime_ns == folder_before


def test_the_first_search_of_a_large_store_stamps_no_file(open_service, paths, large, scans):
    writer = open_service()
    _cards(writer)
    writer.close()
    open_service().close()  # a catalog's one-time provenance refresh (memory.provenance) reads every file
    scans.clear()
    service = open_service()
    assert service.search("what is the staging database called?", k=1)
    assert scans == []  # the quick sync: folder times only
    service.warm_up()  # the session's background job: the full scan happens there
    assert scans == [paths.memory]


def test_an_edit_in_place_is_seen_after_the_background_scan(open_service, paths, large):
    card = _cards(open_service())[0]
    service = open_service()
    service.inline_embed_max = 64  # a session: background upkeep on
    service.search("staging database")
    service.wait_for_upkeep()
    _edit_in_place(paths.memory / "cards" / f"{card.id}.md", "blue-otter", "green-heron")
    store = service.core.stores["project"]
    hits = service.search("what is the staging database called?", k=1)
    assert "green-heron" in hits[0].card.content  # a hit's text is always read from its file ...
    assert store.catalog.lexical("green heron", 5, True) == []  # ... but the index has not seen it yet
    store._last_full_scan -= card_store.BACKGROUND_SCAN_INTERVAL_S  # the next periodic scan is due
    service.search("staging database")  # starts it; does not wait for it
    assert service.wait_for_upkeep()
    assert [i for i, _ in store.catalog.lexical("green heron", 5, True)] == [card.id]
    assert service.search("green heron", k=1)[0].card.id == card.id


def test_added_removed_and_replaced_files_are_seen_without_a_scan(open_service, paths, large, scans):
    cards = _cards(open_service())
    service = open_service()
    service.search("staging")
    scans.clear()
    (paths.memory / "cards" / f"{cards[1].id}.md").unlink()
    newcomer = cards[2].model_copy(update={"id": "m_00000000beef", "content": "Backups run nightly at 02:00 UTC"})
    (paths.memory / "cards" / "m_00000000beef.md").write_text(render(newcomer))
    hits = service.search("when do backups run?", k=1)
    assert hits[0].card.id == "m_00000000beef"
    assert cards[1].id not in {h.card.id for h in service.search("when are invoices generated?")}
    assert scans == []


def _git(*args, cwd):
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True, capture_output=True
    )


def test_a_pull_that_rewrites_a_card_is_seen_by_the_quick_sync(open_service, paths, tmp_path, large, scans):
    if shutil.which("git") is None:
        pytest.fail("git is needed for this test")
    origin = open_service()
    card = _cards(origin)[0]
    origin.close()
    _git("init", "-q", cwd=paths.root)
    _git("add", "-A", cwd=paths.root)
    _git("commit", "-qm", "cards", cwd=paths.root)
    clone = tmp_path / "clone"
    _git("clone", "-q", str(paths.root), str(clone), cwd=tmp_path)
    mine = open_service(paths=project_paths(clone))
    mine.warm_up()  # the catalog records the commit it reflects
    assert mine.core.stores["project"].catalog.get_meta("git_head")
    path = paths.memory / "cards" / f"{card.id}.md"
    path.write_text(path.read_text().replace("blue-otter", "green-heron"))
    _git("commit", "-qam", "rename the staging database", cwd=paths.root)
    _git("pull", "-q", cwd=clone)
    scans.clear()
    hits = mine.search("what is the staging database called?", k=1)
    assert hits[0].card.id == card.id and "green-heron" in hits[0].card.content
    assert scans == []


def test_a_hostile_repository_cannot_run_programs_through_the_git_view(paths, tmp_path):
    from memagent.memory import gitview

    if shutil.which("git") is None:
        pytest.fail("git is needed for this test")
    marker = tmp_path / "ran"
    _git("init", "-q", cwd=paths.root)
    (paths.root / "a.txt").write_text("x")
    _git("add", "-A", cwd=paths.root)
    _git("commit", "-qm", "one", cwd=paths.root)
    hook = f"#!/bin/sh\ntouch {marker}\n"
    monitor = paths.root / "monitor.sh"
    monitor.write_text(hook)
    monitor.chmod(0o755)
    _git("config", "core.fsmonitor", str(monitor), cwd=paths.root)
    _git("config", "diff.external", str(monitor), cwd=paths.root)
    head = gitview.head_commit(paths.root)
    assert head is not None
    assert gitview.changed_between(paths.root, head, head, [paths.root]) == []
    assert not marker.exists()


def test_neither_a_search_nor_closing_waits_for_the_background_scan(open_service, large, monkeypatch):
    service = open_service()
    _cards(service)
    started = []

    def slow_scan(self):
        started.append(time.monotonic())
        time.sleep(5)
        return {}

    monkeypatch.setattr(CardFiles, "scan", slow_scan)
    service.inline_embed_max = 64
    service.core.stores["project"]._last_full_scan = 0.0
    service.search("staging database")
    deadline = time.monotonic() + 5
    while not started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert started
    begun = time.monotonic()
    assert service.search("what is the staging database called?", k=1)  # the scan is still sleeping
    assert time.monotonic() - begun < 3.0
    begun = time.monotonic()
    service.close()
    assert time.monotonic() - begun < 2.0
