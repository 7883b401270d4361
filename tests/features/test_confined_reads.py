"""Files memagent reads by itself never lead it out of the project through a symlink:
instruction files, skills, custom commands and card files (real files, real symlinks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memagent.commands_md import discover_commands
from memagent.features.instructions import load_instructions
from memagent.memory.cardfiles import CardFileError, CardFiles
from memagent.skills import discover_skills

CANARY = "aws_secret_access_key = CANARY-" + "0a1b2c3d4e"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(project, $MEMAGENT_HOME, a fake ~/.aws/credentials)."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    home = tmp_path / "mhome"
    home.mkdir()
    secret = tmp_path / "userhome" / ".aws" / "credentials"
    secret.parent.mkdir(parents=True)
    secret.write_text(f"---\nname: creds\ndescription: {CANARY}\n---\n{CANARY}\n")
    return project, home, secret


@pytest.mark.parametrize("name", ["AGENTS.md", "CLAUDE.md", "sub/AGENTS.md"])
def test_an_instruction_file_linked_out_of_the_project_is_not_read(layout, name: str) -> None:
    project, home, secret = layout
    (project / name).parent.mkdir(parents=True, exist_ok=True)
    (project / name).symlink_to(secret)
    result = load_instructions(project, home, cwd=(project / name).parent)
    assert CANARY not in (result.render() or "")
    assert f"{name}: a symlink to a file outside the project; not read" in result.notes


def test_a_link_inside_the_project_is_fine_and_the_user_file_stays_in_its_home(layout) -> None:
    project, home, secret = layout
    (project / "docs").mkdir()
    (project / "docs" / "agents.md").write_text("Use make.\n")
    (project / "AGENTS.md").symlink_to(project / "docs" / "agents.md")
    (home / "AGENTS.md").symlink_to(secret)
    result = load_instructions(project, home)
    text = result.render() or ""
    assert "Use make." in text and CANARY not in text
    assert any("$MEMAGENT_HOME" in note or "outside" in note for note in result.notes)


def test_skills_linked_out_of_the_project_are_skipped(layout) -> None:
    project, home, secret = layout
    (project / ".agents" / "skills" / "creds").mkdir(parents=True)
    (project / ".agents" / "skills" / "creds" / "SKILL.md").symlink_to(secret)
    (project / ".claude" / "skills").mkdir(parents=True)
    (project / ".claude" / "skills" / "whole").symlink_to(secret.parent)  # a linked skill folder
    (secret.parent / "SKILL.md").write_text(f"---\nname: whole\ndescription: {CANARY}\n---\nbody\n")
    (project / ".agents" / "skills" / "ok").mkdir()
    (project / ".agents" / "skills" / "ok" / "SKILL.md").write_text("---\nname: ok\ndescription: fine\n---\nbody\n")
    index = discover_skills(project, home)
    assert [s.name for s in index.skills] == ["ok"]
    assert sum("symlink leading outside the project" in p for p in index.problems) == 2


def test_commands_linked_out_of_the_project_are_skipped(layout) -> None:
    project, home, secret = layout
    (project / ".claude" / "commands").mkdir(parents=True)
    (project / ".claude" / "commands" / "creds.md").symlink_to(secret)
    (project / ".claude" / "commands" / "fine.md").write_text("Run the tests.\n")
    found = discover_commands(project, home)
    assert found.names() == ["fine"]
    assert any("creds.md is a symlink leading outside the project" in p for p in found.problems)


def test_card_files_are_never_followed(layout) -> None:
    project, _, secret = layout
    files = CardFiles(project / ".memory")
    files.shared.mkdir(parents=True)
    link = files.shared / "m_0123456789ab.md"
    link.symlink_to(secret)
    assert "m_0123456789ab" not in files.scan()
    with pytest.raises(CardFileError, match="symlink"):
        files.read(link)
    linked_folder = CardFiles(project / ".memory2")
    (project / ".memory2").mkdir()
    linked_folder.shared.symlink_to(secret.parent)
    (secret.parent / "m_0123456789ac.md").write_text("x")
    assert linked_folder.scan() == {}
