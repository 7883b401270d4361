"""Skills as Claude Code finds and names them: folder names normalised, the user's own skill
folders, the base directory, binary and huge files, and every skill as a ``/name`` command."""

from __future__ import annotations

from pathlib import Path

from memagent.features.skills import SkillsFeature
from memagent.skills import discover_skills
from memagent.tools.base import ToolContext, ToolRegistry


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    return path


def _run(feature: SkillsFeature, root: Path, **tool_input):
    return ToolRegistry.of(feature.tools()).run("skill", tool_input, ToolContext(root=root))


def test_title_case_names_and_folders_load_under_claude_codes_name(tmp_path):
    root, home, user = tmp_path / "p", tmp_path / "mh", tmp_path / "u"
    # the plugin-dev layout: folder hook-development, front matter name "Hook Development"
    _write(
        root / ".claude" / "skills" / "hook-development" / "SKILL.md",
        "---\nname: Hook Development\ndescription: Develop hooks.\nversion: 0.1.0\n---\nbody\n",
    )
    # a folder that is itself in Title Case, and a front matter name that is not the folder's
    _write(
        root / ".agents" / "skills" / "Release Notes" / "SKILL.md", "---\ndescription: Write release notes.\n---\nb\n"
    )
    _write(root / ".agents" / "skills" / "pdf" / "SKILL.md", "---\nname: pdf-tools\ndescription: PDFs.\n---\nb\n")
    index = discover_skills(root, home, user)
    assert [(s.name, s.title) for s in index.skills] == [
        ("release-notes", ""),
        ("pdf", "pdf-tools"),
        ("hook-development", ""),
    ]
    assert index.problems == []


def test_user_skill_folders_of_claude_code_and_agents_are_found(tmp_path):
    root, home, user = tmp_path / "p", tmp_path / "mh", tmp_path / "u"
    _write(user / ".claude" / "skills" / "standup" / "SKILL.md", "---\ndescription: Stand-up notes.\n---\nb\n")
    _write(user / ".agents" / "skills" / "triage" / "SKILL.md", "---\ndescription: Triage issues.\n---\nb\n")
    _write(user / ".agents" / "skills" / "standup" / "SKILL.md", "---\ndescription: shadowed.\n---\nb\n")
    index = discover_skills(root, home, user)
    assert [(s.name, s.source) for s in index.skills] == [
        ("standup", "user (~/.claude)"),
        ("triage", "user (~/.agents)"),
    ]
    assert any("is shadowed by" in p for p in index.problems)
    feature = SkillsFeature(root, home, user_home=user)
    assert "- triage: Triage issues." in feature.system_text()


def test_the_skill_tool_gives_the_base_directory_and_names_binary_and_huge_files(tmp_path):
    root, user = tmp_path / "p", tmp_path / "u"
    folder = user / ".claude" / "skills" / "pdf"
    _write(folder / "SKILL.md", "---\ndescription: Fill PDF forms.\n---\nRun scripts/fill.py on the form.\n")
    _write(folder / "scripts" / "fill.py", "print('fill')\n")
    _write(folder / "assets" / "form.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 400)
    _write(folder / "reference.md", "x" * 120_000)
    feature = SkillsFeature(root, tmp_path / "mh", user_home=user)
    loaded = _run(feature, root, name="pdf")
    assert f"Base directory for this skill: {folder.resolve()}" in loaded.content
    pdf = _run(feature, root, name="pdf", file="assets/form.pdf")
    assert not pdf.is_error and pdf.content.startswith("[assets/form.pdf is a binary file (102,409 bytes), not shown.")
    assert str(folder.resolve() / "assets" / "form.pdf") in pdf.content and len(pdf.content) < 400
    huge = _run(feature, root, name="pdf", file="reference.md")
    assert (
        len(huge.content) < 51_000
        and "reference.md has 120,000 characters; only the first 50,000 are shown" in huge.content
    )
    assert _run(feature, root, name="pdf", file="scripts/fill.py").content == "print('fill')\n"


def test_a_skill_is_a_slash_command_with_arguments_and_its_allowed_tools(tmp_path):
    root, user = tmp_path / "p", tmp_path / "u"
    _write(
        root / ".claude" / "skills" / "hook-development" / "SKILL.md",
        "---\nname: Hook Development\ndescription: Develop hooks.\nargument-hint: EVENT\n"
        "allowed-tools: Bash(python3:*), Read\nmodel: claude-haiku-4-5\n---\nWrite a $ARGUMENTS hook. Check: !`ls`\n",
    )
    _write(
        user / ".claude" / "skills" / "mine" / "SKILL.md",
        '---\ndescription: Mine.\nallowed-tools: ["Bash(make:*)"]\n---\nDo it.\n',
    )
    trusted = {c.name: c for c in SkillsFeature(root, tmp_path / "mh", user_home=user, trusted=True).commands()}
    hook = trusted["hook-development"]
    assert hook.usage == "/hook-development EVENT" and hook.source == "skill, project (.claude)"
    ran = hook.invoke("PreToolUse")
    folder = (root / ".claude" / "skills" / "hook-development").resolve()
    assert ran.prompt == f"Base directory for this skill: {folder}\n\nWrite a PreToolUse hook. Check: !`ls`"
    assert ran.shell == ["ls"] and ran.allowed_tools == ("Bash(python3:*)", "Read") and ran.model == "claude-haiku-4-5"
    assert trusted["mine"].invoke("").prompt.endswith("Do it.")
    untrusted = {c.name: c for c in SkillsFeature(root, tmp_path / "mh", user_home=user, trusted=False).commands()}
    refused = untrusted["hook-development"].invoke("x")
    assert refused.allowed_tools == () and "allowed-tools ignored, this project is not trusted" in refused.notes[0]
    assert untrusted["mine"].invoke("").allowed_tools == ("Bash(make:*)",)  # the user's own folder counts as trusted
