"""The REPL's ecosystem commands in a real pty: custom commands, !command, @path, /cost, /clear,
/model, /memory's instruction files and Tab completion, against the loopback fake API."""

from __future__ import annotations

import json

import pexpect

from cli.test_repl_pty import _submit
from fakeapi import text
from repl_kit import PROMPT, expect_text


def _user_texts(request) -> str:
    return "\n".join(b.get("text", "") for b in request["messages"][-1]["content"] if b.get("type") == "text")


def _sessions(project) -> list[str]:
    return sorted(p.stem for p in (project / ".transcripts").glob("*.jsonl"))


def test_custom_command_shell_escape_mentions_cost_and_clear(spawn, fake, project):
    commands = project / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "explain.md").write_text("---\ndescription: Explain some code\n---\nExplain $ARGUMENTS in one line.\n")
    (project / "AGENTS.md").write_text("Use tabs.\n")
    (project / "src").mkdir()
    (project / "src" / "calc.py").write_text("def add(a, b):\n    return a + b  # CALC-MARKER\n")
    fake.add(text("It explains."), text("Saw both."), text("Haiku here."), text("After clear."))
    child = spawn()
    child.expect(PROMPT)
    child.expect("memory is off")

    _submit(child, "/help")
    child.expect("Custom commands")
    child.expect("Explain some code")
    child.expect(PROMPT)
    _submit(child, "/explain the parser module")
    expect_text(child, "It explains.")
    child.expect(PROMPT)
    assert "Explain the parser module in one line." in _user_texts(fake.requests[0])

    _submit(child, "!echo SHELL-OUT-$((6*7))")
    child.expect("SHELL-OUT-42")
    child.expect(r"\(exit 0\)")
    child.expect(PROMPT)
    child.send("what about @src/ca")
    child.send("\t")  # Tab completes the path
    child.expect_exact("lc.py")  # the completion adds the rest of the name
    child.send(" now?\r")
    child.expect("attached src/calc.py")
    expect_text(child, "Saw both.")
    child.expect(PROMPT)
    second = _user_texts(fake.requests[1])
    assert second.startswith("what about @src/calc.py now?")
    assert "(exit 0)" in second and "SHELL-OUT-42" in second
    assert "CALC-MARKER" in second and '<attachment source="file src/calc.py">' in second

    _submit(child, "/cost")
    child.expect(r"tokens: [\d,]+ in · [\d,]+ out \(2 model calls\)")
    child.expect(r"cache: [\d,]+ read · [\d,]+ written")
    child.expect(r"estimated cost: \$\d+\.\d{3}")
    child.expect(PROMPT)
    _submit(child, "/memory")
    child.expect("instruction files")
    child.expect(r"AGENTS\.md \(9 chars\)")
    child.expect(PROMPT)
    _submit(child, "/model claude-haiku-4-5")
    child.expect("→ claude-haiku-4-5")
    child.expect(PROMPT)
    _submit(child, "which model?")
    expect_text(child, "Haiku here.")
    child.expect(PROMPT)

    first_session = _sessions(project)
    _submit(child, "/clear")
    child.expect(r"session \d{8}-\d{6}-[0-9a-f]{4}")
    child.expect(PROMPT)
    _submit(child, "fresh start")
    expect_text(child, "After clear.")
    child.expect(PROMPT)
    _submit(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert fake.errors == [] and len(fake.requests) == 4
    assert fake.requests[2]["model"] == "claude-haiku-4-5"
    third = fake.requests[3]
    assert [m["role"] for m in third["messages"]] == ["user"]  # a new session: no earlier history
    assert third["model"] == "claude-sonnet-5-5"  # /clear starts from the configured model again
    assert len(_sessions(project)) == 2 and set(first_session) < set(_sessions(project))
    assert fake.requests[0]["model"] == "claude-sonnet-5-5"
    assert json.dumps(fake.requests[1]).count("CALC-MARKER") == 1


def test_prompt_commands_in_the_repl_hints_completion_snippet_approval_and_skills(spawn, fake, project):
    """A namespaced command file (argument hint in /help, Tab completion), its !`cmd` asking
    like a bash call, and a skill as /name — typed in a real terminal."""
    commands = project / ".claude" / "commands" / "git"
    commands.mkdir(parents=True)
    (commands / "commit.md").write_text(
        "---\ndescription: Commit the staged work\nargument-hint: TYPE\n---\nWrite a $1 commit. Diff: !`echo DIFF-$((2*21))`\n"
    )
    skill = project / ".claude" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: Release Notes\ndescription: Draft release notes\n---\nNotes for $ARGUMENTS.\n"
    )
    fake.add(text("Committed as feat."), text("Notes drafted."))
    child = spawn()
    child.expect(PROMPT)
    _submit(child, "/help")
    child.expect(r"/git:commit TYPE\s+Commit the staged work \[project \(\.claude\)\]")
    child.expect(r"/release-notes\s+Draft release notes \[skill, project \(\.claude\)\]")
    child.expect(PROMPT)
    child.send("/git:co")
    child.send("\t")
    child.expect_exact("mmit")  # Tab completes the namespaced name
    child.send(" feat\r")
    child.expect("bash wants to run: echo DIFF-")
    child.expect("Allow\\?")
    child.send("y")
    expect_text(child, "Committed as feat.")
    child.expect(PROMPT)
    assert _user_texts(fake.requests[0]) == "Write a feat commit. Diff: DIFF-42"
    _submit(child, "/release-notes v2.1")
    expect_text(child, "Notes drafted.")
    child.expect(PROMPT)
    assert _user_texts(fake.requests[1]).endswith("Notes for v2.1.")
    _submit(child, "/exit")
    child.expect(pexpect.EOF)
    assert fake.errors == []
