"""Skills: discovery in three places, broken files named and skipped, the skill tool."""

from __future__ import annotations

from pathlib import Path

from memagent.features.skills import SkillsFeature
from memagent.skills import discover_skills, skill_markdown
from memagent.tools.base import ToolContext, ToolRegistry


def _skill(base: Path, name: str, description: str, body: str = "Do the thing.", files: dict | None = None) -> Path:
    directory = base / name
    directory.mkdir(parents=True)
    (directory / "SKILL.md").write_text(skill_markdown(name, description, body))
    for relative, text in (files or {}).items():
        target = directory / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return directory


def _run(feature: SkillsFeature, root: Path, **tool_input):
    registry = ToolRegistry.of(feature.tools())
    return registry.run("skill", tool_input, ToolContext(root=root))


def test_discovery_order_shadowing_and_broken_files(tmp_path):
    root, home = tmp_path / "p", tmp_path / "home"
    _skill(root / ".agents" / "skills", "release", "Cut a release of this project.")
    _skill(root / ".claude" / "skills", "release", "An older release skill.")
    _skill(root / ".claude" / "skills", "review", "Review a pull request.")
    _skill(home / "skills", "standup", "Write my stand-up notes.")
    broken = root / ".claude" / "skills" / "broken"
    broken.mkdir(parents=True)
    (broken / "SKILL.md").write_text("---\nname: [unclosed\n---\nbody\n")
    vague = root / ".agents" / "skills" / "vague"
    vague.mkdir(parents=True)
    (vague / "SKILL.md").write_text("---\nname: vague\n---\nno description\n")
    index = discover_skills(root, home)
    assert [(s.name, s.source) for s in index.skills] == [
        ("release", "project (.agents)"),
        ("review", "project (.claude)"),
        ("standup", "user"),
    ]
    problems = "\n".join(index.problems)
    assert f"{broken / 'SKILL.md'}: bad front matter" in problems
    assert f"{vague / 'SKILL.md'}: the front matter has no description" in problems
    assert "skill 'release' in" in problems and "is shadowed by" in problems


def test_only_names_and_descriptions_reach_the_system_prompt(tmp_path):
    root = tmp_path / "p"
    _skill(root / ".agents" / "skills", "deploy", "Deploy to staging.", body="SECRET-STEP-BODY: run make deploy")
    feature = SkillsFeature(root, tmp_path / "home")
    text = feature.system_text()
    assert "- deploy: Deploy to staging." in text
    assert "SECRET-STEP-BODY" not in text
    assert [t.name for t in feature.tools()] == ["skill"]


def test_the_skill_tool_loads_the_body_lists_files_and_reads_one(tmp_path):
    root, home = tmp_path / "p", tmp_path / "home"
    files = {"scripts/fill.py": "print('fill')\n", "reference.md": "ref text\n"}
    _skill(home / "skills", "pdf", "Fill PDF forms.", body="1. Run scripts/fill.py\n2. Check", files=files)
    feature = SkillsFeature(root, home)
    loaded = _run(feature, root, name="pdf")
    assert not loaded.is_error
    assert loaded.content.startswith(
        f"# Skill: pdf\n\nBase directory for this skill: {(home / 'skills' / 'pdf').resolve()}"
        "\n\n1. Run scripts/fill.py"
    )
    assert "- reference.md" in loaded.content and "- scripts/fill.py" in loaded.content
    one = _run(feature, root, name="pdf", file="scripts/fill.py")
    assert one.content == "print('fill')\n"  # user-level skill files are readable through the tool
    escape = _run(feature, root, name="pdf", file="../../../etc/passwd")
    assert escape.is_error and "not inside the skill" in escape.content
    unknown = _run(feature, root, name="nope")
    assert unknown.is_error and "available: pdf" in unknown.content


def test_the_body_is_read_when_the_tool_runs(tmp_path):
    root = tmp_path / "p"
    directory = _skill(root / ".agents" / "skills", "fmt", "Format code.", body="old body")
    feature = SkillsFeature(root, tmp_path / "home")
    (directory / "SKILL.md").write_text(skill_markdown("fmt", "Format code.", "new body"))
    assert "new body" in _run(feature, root, name="fmt").content


def test_no_skills_means_no_tool_and_no_text(tmp_path):
    feature = SkillsFeature(tmp_path, tmp_path / "home")
    assert feature.tools() == [] and feature.system_text() is None
