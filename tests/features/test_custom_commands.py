"""Custom slash commands from Markdown files: discovery, precedence, expansion, /help, the REPL table."""

from __future__ import annotations

from pathlib import Path

from memagent.commands_md import discover_commands
from memagent.ui.commands import builtin_names, run_command


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_discovery_precedence_front_matter_and_problems(tmp_path):
    root, home = tmp_path / "p", tmp_path / "home"
    _write(
        root / ".memagent" / "commands" / "review.md",
        "---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $ARGUMENTS carefully.\n",
    )
    _write(root / ".claude" / "commands" / "review.md", "the .claude one loses\n")
    _write(root / ".claude" / "commands" / "git" / "commit.md", "# Write a commit message\nfor the staged changes\n")
    _write(home / "commands" / "standup.md", "Summarise what I did yesterday.\n")
    _write(root / ".claude" / "commands" / "help.md", "shadowing a built-in\n")
    _write(root / ".claude" / "commands" / "bad.md", "---\ndescription: [oops\n---\nbody\n")
    found = discover_commands(root, home, builtin_names())
    assert [(c.name, c.source) for c in found.commands] == [
        ("review", "project (.memagent)"),
        ("git:commit", "project (.claude)"),  # a sub-folder is a namespace, as in Claude Code
        ("standup", "user"),
    ]
    review = found.get("REVIEW")
    assert review.description == "Review a file" and review.usage == "/review FILE"
    assert found.get("git:commit").description == "Write a commit message" and found.get("commit") is None
    problems = "\n".join(found.problems)
    assert "/help" in problems and "built-in" in problems
    assert "bad.md: bad front matter" in problems


def test_expansion_of_arguments_and_positions(tmp_path):
    root = tmp_path / "p"
    _write(root / ".claude" / "commands" / "fix.md", "Fix issue #$1 in $2 (all: $ARGUMENTS). $3\n")
    _write(root / ".claude" / "commands" / "plain.md", "Explain the build.\n")
    found = discover_commands(root, tmp_path / "home")
    fix = found.get("fix")
    assert fix.expand('42 "src/my app.py"') == 'Fix issue #42 in src/my app.py (all: 42 "src/my app.py"). '
    assert found.get("plain").expand("") == "Explain the build."
    assert found.get("plain").expand("for CI") == "Explain the build.\n\nARGUMENTS: for CI"  # Claude Code's wording


def test_run_command_sends_the_expanded_prompt_and_builtins_win(tmp_path):
    root = tmp_path / "p"
    _write(root / ".claude" / "commands" / "todos.md", "not the built-in\n")
    _write(root / ".claude" / "commands" / "ask.md", "---\ndescription: Ask about code\n---\nQuestion: $ARGUMENTS\n")
    custom = discover_commands(root, tmp_path / "home", builtin_names())

    def no_session():
        raise AssertionError("custom commands need no session")

    reply = run_command("/ask why is the sky blue", no_session, custom=custom)
    assert reply.invoke.prompt == "Question: why is the sky blue" and not reply.text and not reply.send
    help_text = run_command("/help", no_session, custom=custom).text
    assert "Custom commands (Markdown prompts, skills, MCP prompts):" in help_text
    assert "/ask" in help_text and "Ask about code [project (.claude)]" in help_text
    assert custom.get("todos") is None  # the built-in /todos wins
    assert run_command("/nope", no_session, custom=custom).text.startswith("Unknown command /nope")
