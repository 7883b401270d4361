"""A card file whose name is not UTF-8 is named (its bad bytes escaped) and skipped; it never
takes memory down: not the CLI, not a session, whichever folder it lies in."""

from __future__ import annotations

import os
from pathlib import Path

from fakeapi import FakeAnthropic, text

LEXICAL = {"MEMAGENT_EMBEDDER": "lexical"}
BAD = b"m_\xff\xfe-broken.md"


def plant_bad_name(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with open(os.fsencode(folder) + b"/" + BAD, "w") as fh:
        fh.write("---\nid: m_000000000001\n---\nNot a valid card name\n")


def test_list_and_search_name_the_file_and_carry_on(run_cli, project):
    added = run_cli("-C", str(project), "memory", "add", "The build uses ninja through CMake presets", env=LEXICAL)
    assert added.returncode == 0, added.stderr
    plant_bad_name(project / ".memory" / "cards")
    listed = run_cli("-C", str(project), "memory", "list", env=LEXICAL)
    assert listed.returncode == 0, listed.stderr
    assert "ninja through CMake" in listed.stdout
    assert "m_\\xff\\xfe-broken.md" in listed.stderr and "not UTF-8" in listed.stderr
    found = run_cli("-C", str(project), "memory", "search", "ninja build", env=LEXICAL)
    assert found.returncode == 0 and "ninja through CMake" in found.stdout


def test_a_bad_name_in_the_private_folder_or_the_user_store_is_skipped_too(run_cli, project, cli_env):
    """Variants: .memory/local/private/ and $MEMAGENT_HOME/memory/cards/."""
    added = run_cli("-C", str(project), "memory", "add", "Use tabs in Makefiles", "--scope", "user", env=LEXICAL)
    assert added.returncode == 0, added.stderr
    plant_bad_name(project / ".memory" / "local" / "private")
    plant_bad_name(Path(cli_env["MEMAGENT_HOME"]) / "memory" / "cards")
    stats = run_cli("-C", str(project), "memory", "stats", env=LEXICAL)
    assert stats.returncode == 0, stats.stderr
    assert stats.stderr.count("not UTF-8") == 2


def test_a_session_keeps_memory_on(run_cli, project):
    """Variant: a session (`-p`) with memory on answers and still retrieves the good cards."""
    run_cli("-C", str(project), "memory", "add", "Deploys are frozen on Fridays", env=LEXICAL)
    plant_bad_name(project / ".memory" / "cards")
    with FakeAnthropic() as fake:
        fake.add(text("No deploys on Fridays."))
        result = run_cli(
            "-C", str(project), "-p", "Can I deploy on Fridays?", env={"ANTHROPIC_BASE_URL": fake.url, **LEXICAL}
        )
        assert result.returncode == 0, result.stderr
        assert "memory is off" not in result.stderr
        assert "Deploys are frozen on Fridays" in str(fake.requests[0]["messages"][-1])


def _count_listings(monkeypatch) -> list[int]:
    from memagent.memory.cardfiles import CardFiles

    calls: list[int] = []
    listing = CardFiles.misnamed

    def counted(self):
        calls.append(1)
        return listing(self)

    monkeypatch.setattr(CardFiles, "misnamed", counted)
    return calls


def test_the_folders_are_listed_again_only_when_they_changed(service, paths, monkeypatch):
    """A session's start names bad file names without listing every card file each time: the
    listing is kept with the folders' times and redone when a name is added, renamed or removed."""
    service.save("The release train leaves on Tuesdays", "fact")
    plant_bad_name(paths.memory / "cards")
    calls = _count_listings(monkeypatch)
    first = [n for n in service.notices() if "not UTF-8" in n]
    assert len(first) == 1 and "m_\\xff\\xfe-broken.md" in first[0]
    listed = len(calls)
    assert [n for n in service.notices() if "not UTF-8" in n] == first
    assert len(calls) == listed, "unchanged folders were listed again"
    second = paths.memory / "cards"
    with open(os.fsencode(second) + b"/m_\xfa-other.md", "w") as fh:  # variant: a second bad name
        fh.write("x")
    assert len([n for n in service.notices() if "not UTF-8" in n]) == 2
    os.remove(os.fsencode(second) + b"/" + BAD)  # variant: a bad name removed is no longer named
    os.remove(os.fsencode(second) + b"/m_\xfa-other.md")
    assert [n for n in service.notices() if "not UTF-8" in n] == []


def test_a_damaged_kept_listing_is_listed_afresh(service, paths):
    service.save("The release train leaves on Tuesdays", "fact")
    plant_bad_name(paths.memory / "cards")
    service.notices()
    store = service._stores["project"]
    catalog = store.open_catalog()
    with catalog.transaction() as db:
        stamp = (catalog.get_meta("misnamed") or "").partition("\n")[0]
        catalog.set_meta(db, "misnamed", stamp + "\n{not json")
    assert len([n for n in service.notices() if "not UTF-8" in n]) == 1


def test_the_profiles_newest_cards_of_a_scope_are_read_through_an_index(service):
    """Session start reads each scope's newest cards; with no card of that scope, a sort over every
    card of the catalog took a second at 100k cards."""
    service.save("The release train leaves on Tuesdays", "fact")
    db = service._stores["project"].open_catalog().db()
    plan = db.execute(
        "EXPLAIN QUERY PLAN SELECT created_at, id FROM cards WHERE active = ? AND scope = ? "
        "ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
        (1, "user", 200, 0),
    ).fetchall()
    details = " ".join(str(row[-1]) for row in plan)
    assert "USING COVERING INDEX" in details and "TEMP B-TREE" not in details, details
