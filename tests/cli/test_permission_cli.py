"""Permission modes and rules through the real CLI and the fake API: --permission-mode plan
refuses changes even with --yes, acceptEdits writes without --yes while bash is refused, and a
deny rule from the user's config refuses a read naming the rule."""

from __future__ import annotations

from pathlib import Path

from fakeapi import FakeAnthropic, text, tool, turn


def results(fake: FakeAnthropic, request: int) -> list[dict]:
    return [b for b in fake.requests[request]["messages"][-1]["content"] if b.get("type") == "tool_result"]


def run(run_cli, project, steps, *flags):
    with FakeAnthropic() as fake:
        fake.add(*steps)
        result = run_cli("-C", str(project), "-p", "go", "--no-memory", *flags, env={"ANTHROPIC_BASE_URL": fake.url})
        assert result.returncode == 0, result.stderr
        assert fake.errors == [] and fake.remaining == 0
        return [results(fake, n) for n in range(1, len(fake.requests))]


def test_plan_mode_refuses_changes_even_with_yes(run_cli, project):
    (project / "app.py").write_text("print(1)\n")
    steps = [
        turn(
            "Looking.",
            tool("read_file", {"path": "app.py"}),
            tool("write_file", {"path": "app.py", "content": "x"}),
            tool("bash", {"command": "touch made.txt"}),
        ),
        text("Plan: change app.py."),
    ]
    [calls] = run(run_cli, project, steps, "--permission-mode", "plan", "--yes")
    read, write, bash = calls
    assert not read.get("is_error") and "print(1)" in read["content"]
    assert write["is_error"] and bash["is_error"] and "plan mode" in write["content"]
    assert (project / "app.py").read_text() == "print(1)\n" and not (project / "made.txt").exists()


def test_accept_edits_and_a_user_deny_rule(run_cli, project, cli_env):
    (Path(cli_env["MEMAGENT_HOME"]) / "config.toml").write_text('deny = ["Read(.env)"]\n')
    (project / ".env").write_text("K=v\n")
    steps = [
        turn(
            "Working.",
            tool("write_file", {"path": "notes.md", "content": "hi\n"}),
            tool("bash", {"command": "touch made.txt"}),
            tool("read_file", {"path": ".env"}),
        ),
        text("done"),
    ]
    [calls] = run(run_cli, project, steps, "--permission-mode", "acceptEdits")
    write, bash, read = calls
    assert not write.get("is_error") and (project / "notes.md").read_text() == "hi\n"
    assert bash["is_error"] and "--yes" in bash["content"] and not (project / "made.txt").exists()
    assert read["is_error"] and "Read(.env)" in read["content"]


def test_a_bad_rule_or_mode_is_one_line_and_exit_2(run_cli, project, cli_env):
    (Path(cli_env["MEMAGENT_HOME"]) / "config.toml").write_text('allow = ["Bash("]\n')
    result = run_cli("-C", str(project), "-p", "hi", "--no-memory")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Bash(" in result.stderr
    assert "Traceback" not in result.stderr
    result = run_cli("-C", str(project), "-p", "hi", "--permission-mode", "yolo")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "acceptEdits" in result.stderr
