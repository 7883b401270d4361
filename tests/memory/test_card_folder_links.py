"""A card folder (``.memory/cards``, ``.memory/local/private``) that is a symlink is never written
through, nor deleted from: a repository could ship one pointing at another folder, or a command
could swap one in during a session."""

from __future__ import annotations

from pathlib import Path

import pytest

LEXICAL = {"MEMAGENT_EMBEDDER": "lexical"}


@pytest.mark.parametrize("folder", ["cards", "local/private"])
def test_memory_add_through_a_linked_card_folder_writes_nothing_outside(run_cli, project, tmp_path, folder):
    victim = tmp_path / "victim"
    victim.mkdir()
    (project / ".memory" / folder).parent.mkdir(parents=True, exist_ok=True)
    (project / ".memory" / folder).symlink_to(victim)
    extra = ("--private",) if folder.endswith("private") else ()
    added = run_cli("-C", str(project), "memory", "add", "The build uses make", "--type", "fact", *extra, env=LEXICAL)
    assert added.returncode != 0
    assert "is a symlink" in added.stderr and "Traceback" not in added.stderr
    assert added.stderr.strip().count("\n") == 0
    assert list(victim.iterdir()) == []


def test_forget_never_deletes_through_a_linked_card_folder(run_cli, project, tmp_path):
    added = run_cli("-C", str(project), "memory", "add", "The build uses make", "--type", "fact", "--json", env=LEXICAL)
    assert added.returncode == 0, added.stderr
    cards = project / ".memory" / "cards"
    victim = tmp_path / "victim"
    cards.rename(victim)  # the card files now live outside; the folder becomes a link to them
    cards.symlink_to(victim)
    before = sorted(p.name for p in victim.iterdir())
    card_id = before[0].removesuffix(".md")
    run_cli("-C", str(project), "memory", "forget", card_id, "--yes", env=LEXICAL)
    assert sorted(p.name for p in victim.iterdir()) == before
    assert Path(victim / before[0]).exists()


def test_a_linked_private_folder_of_the_earlier_layout_is_never_followed(run_cli, project, tmp_path):
    """``.memory/private`` was the private cards' folder before ``.memory/local``: a repository
    shipping it as a link gets nothing written through it (the card goes to ``local/private``)."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (project / ".memory").mkdir()
    (project / ".memory" / "private").symlink_to(victim)
    added = run_cli(
        "-C", str(project), "memory", "add", "The build uses make", "--type", "fact", "--private", env=LEXICAL
    )
    assert added.returncode == 0, added.stderr
    assert list(victim.iterdir()) == []
    assert list((project / ".memory" / "local" / "private").glob("m_*.md"))
