"""`.memory/` is safe to commit: after a session `git add .memory` stages the shared cards and the
project identity only, no committed byte names a local path, and a store laid out as earlier
versions wrote it moves its local files into `.memory/local/` once, losing nothing and rewriting
no card. Through the real CLI, real git and the loopback fake API."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from fakeapi import FakeAnthropic, text, tool
from memagent.memory.layout import LOCAL_GITIGNORE, migrate_layout
from memory.learnkit import Brain, Fact

LEXICAL = {"MEMAGENT_EMBEDDER": "lexical", "MEMAGENT_AUTO_EXTRACT": "false"}
# A store as memagent before `.memory/local/` wrote it: made by running that version's
# `memory add` (a shared and a --private card), `memory forget` (a tombstone) and its
# LearningHistory.append (one decision), with MEMAGENT_EMBEDDER=lexical; `.memory/` tarred as is.
MAIN_LAYOUT = Path(__file__).parent / "data" / "main_layout_store.tar.gz"


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def staged(project: Path) -> list[str]:
    git("add", ".memory", cwd=project)
    lines = git("status", "--porcelain", "--", ".memory", cwd=project).splitlines()
    assert all(line.startswith("A  ") for line in lines), lines
    return sorted(line[3:] for line in lines)


def staged_bytes(project: Path) -> str:
    return git("diff", "--cached", "--", ".memory", cwd=project)


def only_cards_and_identity(names: list[str]) -> bool:
    return bool(names) and all(n == ".memory/project-id" or n.startswith(".memory/cards/m_") for n in names)


@pytest.mark.timeout(400)
def test_after_a_session_git_add_stages_only_cards_and_the_identity(run_cli, project, tmp_path):
    git("init", "-q", cwd=project)
    (project / "app.py").write_text("print('hi')\n")
    steps = [
        tool(
            "memory_save",
            {"content": "Releases are tagged vX.Y.Z on the main branch", "memory_type": "decision", "confidence": 0.95},
            id="m1",
        ),
        tool(
            "memory_save",
            {"content": "This session is exploring the parser", "memory_type": "event", "scope": "session"},
            id="m2",
        ),
        text("Saved."),
    ]
    with FakeAnthropic(steps) as fake:
        result = run_cli(
            "-C",
            str(project),
            "-p",
            "remember how we tag releases",
            "--yes",
            env={**LEXICAL, "ANTHROPIC_BASE_URL": fake.url},
            timeout=240,
        )
        assert result.returncode == 0, result.stderr
        assert fake.errors == []
    private = run_cli(
        "-C", str(project), "memory", "add", "My checkout uses the venv in .venv-local", "--private", env=LEXICAL
    )
    assert private.returncode == 0, private.stderr

    names = staged(project)
    assert only_cards_and_identity(names), names
    assert len([n for n in names if n.startswith(".memory/cards/")]) == 1  # session and private cards stay out
    committed = staged_bytes(project)
    assert str(tmp_path) not in committed and os.environ["HOME"] not in committed  # no local path
    assert "scope_id: p_" in committed
    local = project / ".memory" / "local"
    assert (local / ".gitignore").read_text() == LOCAL_GITIGNORE
    assert list((local / "private").glob("m_*.md")) and (local / "index").is_dir()


@pytest.mark.timeout(400)
def test_the_default_embedder_keeps_its_vector_cache_out_of_git(run_cli, project, tmp_path):
    git("init", "-q", cwd=project)
    added = run_cli(
        "-C",
        str(project),
        "memory",
        "add",
        "The staging database is called blue-otter",
        "--json",
        env={"MEMAGENT_EMBEDDER": "auto"},
        timeout=240,
    )
    assert added.returncode == 0, added.stderr
    assert list((project / ".memory" / "local" / "vectors").rglob("*.vec"))  # the cache exists, locally
    names = staged(project)
    assert only_cards_and_identity(names), names
    assert str(tmp_path) not in staged_bytes(project)


LEARNED = [
    Fact("we always deploy with make ship", "The project deploys with make ship.", "procedure"),
    Fact("we always lint with ruff", "The project lints with ruff.", "procedure"),
]


@pytest.mark.timeout(600)
def test_learning_keeps_its_locks_and_counts_in_the_local_index(run_cli, project):
    """Catch-up (live marks, its lock) and the daily limit (the write counts) keep their files
    in `.memory/local/index/`: no top-level `index/` appears, so nothing is migrated again at
    the next open (which would move a running session's live mark), and git stages none of it."""
    git("init", "-q", cwd=project)
    (project / ".memagent.toml").write_text("memory_auto_writes_per_day = 1\n")
    brain = Brain(facts=LEARNED)
    memory = project / ".memory"
    for fact in LEARNED:
        with FakeAnthropic(responder=brain) as fake:
            result = run_cli(
                "-C",
                str(project),
                "-p",
                f"Remember: {fact.trigger}.",
                env={"MEMAGENT_EMBEDDER": "lexical", "ANTHROPIC_BASE_URL": fake.url},
                timeout=180,
            )
            assert result.returncode == 0, result.stderr
            assert fake.errors == []
        assert "into local/" not in result.stderr  # nothing of the old layout was made to move
        assert not (memory / "index").exists()
    assert len(brain.extraction_prompts) == 2  # learning ran in both sessions

    index = memory / "local" / "index"
    assert (index / "catchup.lock").is_file() and list((index / "live").glob("*.lock"))
    counts = json.loads((index / "auto_writes.json").read_text())
    assert sum(counts["sessions"].values()) == 1  # the daily limit held across the two processes
    history = (memory / "local" / "history.jsonl").read_text()
    assert "already saved today" in history
    assert not any((memory / name).exists() for name in ("index", "history.jsonl", "private", "tombstones.jsonl"))

    listed = run_cli("-C", str(project), "memory", "list", "--json", env={"MEMAGENT_EMBEDDER": "lexical"})
    assert listed.returncode == 0 and "into local/" not in listed.stderr, listed.stderr
    assert _learned(json.loads(listed.stdout)) == {LEARNED[0].content}
    names = staged(project)
    assert only_cards_and_identity(names), names


def _learned(cards: list[dict]) -> set[str]:
    return {c["content"] for c in cards if c["memory_type"] != "event"}


def _unpack_main_layout(project: Path) -> dict[str, str]:
    with tarfile.open(MAIN_LAYOUT) as tar:
        tar.extractall(project, filter="data")
    memory = project / ".memory"
    return {
        "shared": next((memory / "cards").glob("m_*.md")).stem,
        "private": next((memory / "private").glob("m_*.md")).stem,
        "forgotten": json.loads((memory / "tombstones.jsonl").read_text().splitlines()[0])["id"],
    }


@pytest.mark.timeout(400)
def test_a_store_of_the_earlier_layout_moves_once_and_loses_nothing(run_cli, project):
    git("init", "-q", cwd=project)
    ids = _unpack_main_layout(project)
    memory = project / ".memory"
    card_file = memory / "cards" / f"{ids['shared']}.md"
    before = card_file.read_bytes()
    history = (memory / "history.jsonl").read_bytes()
    assert b"scope_id: /" in before  # the earlier versions scoped cards by an absolute path

    listed = run_cli("-C", str(project), "memory", "list", "--json", env=LEXICAL)
    assert listed.returncode == 0, listed.stderr
    assert {c["id"] for c in json.loads(listed.stdout)} == {ids["shared"], ids["private"]}
    assert "into local/" in listed.stderr
    local = memory / "local"
    assert (local / "history.jsonl").read_bytes() == history
    assert ids["forgotten"] in (local / "tombstones.jsonl").read_text()
    assert (local / "private" / f"{ids['private']}.md").is_file()
    assert not any((memory / name).exists() for name in ("history.jsonl", "tombstones.jsonl", "private", "index"))
    assert card_file.read_bytes() == before  # opening never rewrites a card (no churn in git)
    assert only_cards_and_identity(staged(project))  # the old, untracked .gitignore went too

    again = run_cli("-C", str(project), "memory", "list", "--json", env=LEXICAL)
    assert again.returncode == 0 and "into local/" not in again.stderr  # once

    accepted = run_cli("-C", str(project), "memory", "review", "--accept", ids["shared"], env=LEXICAL)
    assert accepted.returncode == 0, accepted.stderr  # a card file from elsewhere: this machine did not write it
    edited = run_cli(
        "-C",
        str(project),
        "memory",
        "edit",
        ids["shared"],
        "Releases are tagged vX.Y.Z on main only",
        "--json",
        env=LEXICAL,
    )
    assert edited.returncode == 0, edited.stderr
    new_id = json.loads(edited.stdout)["card"]["id"]
    for card_id in (ids["shared"], new_id):  # rewritten: the new form
        text_now = (memory / "cards" / f"{card_id}.md").read_text()
        assert "scope_id: p_" in text_now and str(project) not in text_now


def test_a_committed_old_gitignore_and_a_tracked_vector_cache_stay_put(tmp_path):
    root = tmp_path / "p"
    memory = root / ".memory"
    (memory / "vectors" / "model").mkdir(parents=True)
    (memory / "vectors" / "model" / "00.vec").write_text("memagent-vectors 1 model 4\n")
    old_ignore = (
        "# Written by memagent: the index is rebuilt from the card files; private cards stay here.\nindex/\nprivate/\n"
    )
    (memory / ".gitignore").write_text(old_ignore)
    (memory / "history.jsonl").write_text('{"kind":"run"}\n')
    git("init", "-q", cwd=root)
    git("add", ".memory", cwd=root)
    git("commit", "-qm", "memory", cwd=root)
    moved = migrate_layout(memory)
    assert moved == ["history.jsonl -> local/history.jsonl"]
    assert (memory / ".gitignore").read_text() == old_ignore and (memory / "vectors" / "model" / "00.vec").is_file()


def test_two_layouts_at_once_are_merged_not_dropped(tmp_path):
    memory = tmp_path / ".memory"
    (memory / "private").mkdir(parents=True)
    (memory / "local" / "private").mkdir(parents=True)
    (memory / "tombstones.jsonl").write_text('{"id": "m_000000000001", "forgotten_at": "a"}\n')
    (memory / "local" / "tombstones.jsonl").write_text('{"id": "m_000000000002", "forgotten_at": "b"}\n')
    (memory / "private" / "m_000000000003.md").write_text("old layout card")
    (memory / "local" / "private" / "m_000000000004.md").write_text("new layout card")
    migrate_layout(memory)
    lines = (memory / "local" / "tombstones.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["m_000000000001", "m_000000000002"]
    assert sorted(p.name for p in (memory / "local" / "private").iterdir()) == [
        "m_000000000003.md",
        "m_000000000004.md",
    ]
    assert not (memory / "private").exists() and not (memory / "tombstones.jsonl").exists()


def test_a_symlinked_local_folder_from_a_repository_is_refused_in_one_line(run_cli, project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".memory").mkdir()
    (project / ".memory" / "local").symlink_to(elsewhere)
    added = run_cli("-C", str(project), "memory", "add", "Releases are tagged vX.Y.Z on main", env=LEXICAL)
    assert added.returncode == 1 and "symlink" in added.stderr and len(added.stderr.strip().splitlines()) == 1
    assert "Traceback" not in added.stderr and list(elsewhere.iterdir()) == []
