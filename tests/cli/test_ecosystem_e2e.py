"""AGENTS.md/CLAUDE.md and skills end to end: the real CLI, the real SDK, the loopback fake API."""

from __future__ import annotations

import json

import pytest

from fakeapi import FakeAnthropic, text, tool, turn
from fakeapi.server import system_text
from memagent.skills import skill_markdown

SMALL = "claude-haiku-4-5"
SUMMARY = "## Goal\nRead the modules.\n## Next step\nanswer"


@pytest.fixture
def fake():
    def summaries(body):
        return text(SUMMARY) if body["model"] == SMALL else None

    with FakeAnthropic(chores=summaries) as server:
        yield server


def _print(run_cli, fake, project, prompt, *flags):
    return run_cli(
        "-C", str(project), "--no-memory", "--yes", "-p", prompt, *flags, env={"ANTHROPIC_BASE_URL": fake.url}
    )


def _texts(message) -> str:
    return "\n".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")


def test_instructions_with_an_import_are_in_the_system_prompt_once_also_after_compaction(run_cli, fake, project):
    (project / ".git").mkdir()
    (project / "docs").mkdir()
    (project / "AGENTS.md").write_text("Project rule: always run `make check`.\nStyle guide: @docs/style.md\n")
    (project / "docs" / "style.md").write_text("IMPORTED-STYLE-RULE: four-space indents.\n")
    (project / "CLAUDE.md").write_text("@AGENTS.md\n")
    for number in range(3):
        (project / f"mod{number}.py").write_text(f"# module {number}\n" + "x = 1\n" * 800)
    fake.add(tool("read_file", {"path": "mod0.py"}), tool("read_file", {"path": "mod1.py"}), text("Read both."))
    first_run = _print(run_cli, fake, project, "read the modules")
    assert first_run.returncode == 0, first_run.stderr
    fake.add(
        turn("Compacting now.", tool("compact", {})), tool("read_file", {"path": "mod2.py"}), text("Done reading.")
    )
    result = _print(run_cli, fake, project, "compact, then read mod2", "-c")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Done reading.\n"
    assert fake.errors == [] and fake.remaining == 0

    main = [r for r in fake.requests if r["model"] != SMALL]
    assert len(main) == 6
    first = system_text(main[0])
    assert "Project rule: always run `make check`." in first
    assert "## docs/style.md (imported by AGENTS.md)\n\nIMPORTED-STYLE-RULE: four-space indents." in first
    assert first.count("IMPORTED-STYLE-RULE") == 1  # CLAUDE.md's @AGENTS.md does not repeat it
    assert all(system_text(r) == first for r in main)  # byte-stable, and the same in the resumed session

    assert len(fake.chore_requests) == 1, result.stderr  # one summary call: the compaction happened
    after = "\n".join(_texts(m) for m in main[4]["messages"])
    assert "Summary of the earlier conversation" in after, result.stderr
    # the instructions stay in the system prompt; sending them again in the messages would double them
    assert "IMPORTED-STYLE-RULE" not in json.dumps(main[4]["messages"])
    assert json.dumps(main[4]).count("IMPORTED-STYLE-RULE") == 1


def test_a_skill_body_is_loaded_only_when_the_skill_tool_is_called(run_cli, fake, project):
    skill_dir = project / ".claude" / "skills" / "release"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text(
        skill_markdown("release", "Cut a release of this project.", "RELEASE-BODY: bump the version, tag, push.")
    )
    (skill_dir / "checklist.md").write_text("- changelog\n")
    broken = project / ".agents" / "skills" / "broken"
    broken.mkdir(parents=True)
    (broken / "SKILL.md").write_text("---\ndescription: [oops\n---\n")
    fake.add(tool("skill", {"name": "release"}, id="toolu_skill"), text("I will bump, tag and push."))
    result = _print(run_cli, fake, project, "release it")
    assert result.returncode == 0, result.stderr
    first, second = fake.requests
    assert "- release: Cut a release of this project." in system_text(first)
    assert "RELEASE-BODY" not in json.dumps(first)
    assert "skill" in [t["name"] for t in first["tools"]]
    [loaded] = [b for b in second["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert loaded["tool_use_id"] == "toolu_skill" and "RELEASE-BODY" in loaded["content"]
    assert "- checklist.md" in loaded["content"]
    assert f"memagent: warning: skill skipped: {broken / 'SKILL.md'}: bad front matter" in result.stderr
