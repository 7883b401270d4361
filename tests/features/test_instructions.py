"""Instruction files: discovery from the git root down, @imports, confinement, cycles, budget."""

from __future__ import annotations

from pathlib import Path

from memagent.features.instructions import (
    InstructionsFeature,
    find_imports,
    load_instructions,
)


def _repo(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A git repository with a project in a sub-directory; returns (repo, project, home)."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    project = repo / "services" / "api"
    project.mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    return repo, project, home


def test_files_from_the_git_root_down_to_the_project_then_the_user_file_first(tmp_path):
    repo, project, home = _repo(tmp_path)
    (repo / "AGENTS.md").write_text("Root rule: use uv.\n")
    (repo / "services" / "CLAUDE.md").write_text("Services rule: no globals.\n")
    (project / "AGENTS.md").write_text("API rule: FastAPI only.\n")
    (project / "CLAUDE.md").write_text("API Claude rule.\n")
    (home / "AGENTS.md").write_text("User rule: answer in English.\n")
    loaded = load_instructions(project, home)
    assert [f.label for f in loaded.files] == [
        "$MEMAGENT_HOME/AGENTS.md",
        str(repo / "AGENTS.md"),
        str(repo / "services" / "CLAUDE.md"),
        "AGENTS.md",
        "CLAUDE.md",
    ]
    text = loaded.render()
    order = [text.index(rule) for rule in ("User rule", "Root rule", "Services rule", "API rule", "API Claude rule")]
    assert order == sorted(order)


def test_without_git_only_the_project_root_is_searched(tmp_path):
    (tmp_path / "AGENTS.md").write_text("above the project: not read\n")
    project = tmp_path / "p"
    project.mkdir()
    (project / "AGENTS.md").write_text("project rule\n")
    loaded = load_instructions(project, tmp_path / "nohome")
    assert [f.label for f in loaded.files] == ["AGENTS.md"]
    assert "not read" not in loaded.render()


def test_imports_are_relative_nested_and_placed_after_their_importer(tmp_path):
    _, project, home = _repo(tmp_path)
    (project / "docs").mkdir()
    (project / "AGENTS.md").write_text("Main. See @docs/style.md for style.\nEnd of main.\n")
    (project / "docs" / "style.md").write_text("Style: black. Details in @./naming.md\n")
    (project / "docs" / "naming.md").write_text("Naming: snake_case.\n")
    (project / "CLAUDE.md").write_text("@AGENTS.md\n")  # the usual one-line CLAUDE.md
    loaded = load_instructions(project, home)
    assert [(f.label, f.imported_by) for f in loaded.files] == [
        ("AGENTS.md", None),
        ("docs/style.md", "AGENTS.md"),
        ("docs/naming.md", "docs/style.md"),
        ("CLAUDE.md", None),
    ]
    text = loaded.render()
    assert text.count("Main. See") == 1  # AGENTS.md is not repeated through CLAUDE.md's import
    assert "## docs/naming.md (imported by docs/style.md)\n\nNaming: snake_case." in text
    assert loaded.notes == []


def test_a_cycle_is_refused_with_a_note(tmp_path):
    _, project, home = _repo(tmp_path)
    (project / "AGENTS.md").write_text("A imports @b.md\n")
    (project / "b.md").write_text("B imports @AGENTS.md back\n")
    loaded = load_instructions(project, home)
    assert [f.label for f in loaded.files] == ["AGENTS.md", "b.md"]
    assert loaded.notes == ["b.md: import of AGENTS.md refused (an import cycle)"]
    assert "[b.md: import of AGENTS.md refused (an import cycle)]" in loaded.render()


def test_imports_outside_the_repository_are_refused(tmp_path):
    repo, project, home = _repo(tmp_path)
    secret = tmp_path / "secret.md"
    secret.write_text("TOP SECRET\n")
    (project / "AGENTS.md").write_text("@../../../secret.md and @/etc/hostname\n")
    (repo / "shared.md").write_text("shared, inside the repository\n")
    (project / "CLAUDE.md").write_text("@../../shared.md\n")
    loaded = load_instructions(project, home)
    text = loaded.render()
    assert "TOP SECRET" not in text
    assert "shared, inside the repository" in text  # the git root is the confinement base
    assert any("@../../../secret.md refused (outside" in note for note in loaded.notes)
    assert any("@/etc/hostname refused" in note for note in loaded.notes)


def test_a_symlink_out_of_the_project_is_refused(tmp_path):
    _, project, home = _repo(tmp_path)
    outside = tmp_path / "outside.md"
    outside.write_text("outside text\n")
    (project / "link.md").symlink_to(outside)
    (project / "AGENTS.md").write_text("@link.md\n")
    loaded = load_instructions(project, home)
    assert "outside text" not in loaded.render()
    assert loaded.notes and "refused" in loaded.notes[0]


def test_code_emails_and_prose_are_not_imports():
    text = "Mail bob@example.com, see `@skip.md`, ping @alice.\n```\n@fenced.md\n```\nReal: @docs/x.md"
    assert find_imports(text) == ["alice", "docs/x.md"]


def test_missing_path_like_import_gets_a_note_and_prose_does_not(tmp_path):
    _, project, home = _repo(tmp_path)
    (project / "AGENTS.md").write_text("Ask @alice. Read @docs/missing.md\n")
    loaded = load_instructions(project, home)
    assert loaded.notes == ["AGENTS.md: @docs/missing.md not found"]


def test_import_depth_is_bounded(tmp_path):
    _, project, home = _repo(tmp_path)
    (project / "AGENTS.md").write_text("@l1.md\n")
    for level in range(1, 9):
        (project / f"l{level}.md").write_text(f"level {level} @l{level + 1}.md\n")
    loaded = load_instructions(project, home)
    assert "level 5" in loaded.render() and "level 6" not in loaded.render()
    assert any("nest deeper than 5" in note for note in loaded.notes)


def test_budget_cuts_the_least_specific_files_first_and_says_so(tmp_path):
    _, project, home = _repo(tmp_path)
    (home / "AGENTS.md").write_text("u" * 600)
    (project / "AGENTS.md").write_text("a" * 500 + "A" * 100)
    (project / "CLAUDE.md").write_text("c" * 600)
    feature = InstructionsFeature(project, home, max_chars=1000)
    statuses = [(f.label, f.status) for f in feature.files]
    assert statuses == [("$MEMAGENT_HOME/AGENTS.md", "omitted"), ("AGENTS.md", "truncated"), ("CLAUDE.md", "loaded")]
    text = feature.system_text()
    assert "c" * 600 in text  # the most specific file is whole
    assert "A" * 100 in text and "a" * 300 in text and "a" * 301 not in text  # the end of the one that crosses is kept
    assert "u" * 10 not in text
    assert "[… 200 characters cut]" in text
    note = "instruction files exceed the budget of 1,000 characters: truncated AGENTS.md; left out $MEMAGENT_HOME/AGENTS.md"
    assert note in text and feature.warnings == [note]


def test_system_text_is_stable_and_not_reinjected_after_a_compaction(tmp_path):
    _, project, home = _repo(tmp_path)
    (project / "AGENTS.md").write_text("Always run pytest -q.\n")
    feature = InstructionsFeature(project, home)
    first = feature.system_text()
    (project / "AGENTS.md").write_text("changed on disk mid-session\n")
    assert feature.system_text() == first  # computed once: the cached prefix never changes
    assert feature.reinject() is None  # it is in the system prompt, which a compaction keeps
    assert "Always run pytest -q." in first


def test_no_files_means_no_text(tmp_path):
    _, project, home = _repo(tmp_path)
    feature = InstructionsFeature(project, home)
    assert feature.system_text() is None and feature.reinject() is None and feature.files == []


def test_files_down_to_a_working_directory_inside_the_project_and_warnings_reported(tmp_path):
    repo, project, home = _repo(tmp_path)
    (project / "pkg" / "sub").mkdir(parents=True)
    (project / "AGENTS.md").write_text("api\n")
    (project / "pkg" / "AGENTS.md").write_text("pkg rule @missing/file.md\n")
    (project / "pkg" / "sub" / "CLAUDE.md").write_text("sub rule\n")
    warned: list[str] = []
    feature = InstructionsFeature(project, home, cwd=project / "pkg" / "sub", warn=warned.append)
    assert [f.label for f in feature.files] == ["AGENTS.md", "pkg/AGENTS.md", "pkg/sub/CLAUDE.md"]
    assert warned == ["pkg/AGENTS.md: @missing/file.md not found"]
    elsewhere = InstructionsFeature(project, home, cwd=tmp_path)  # a working directory outside: root only
    assert [f.label for f in elsewhere.files] == ["AGENTS.md"]
