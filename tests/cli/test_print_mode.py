"""`memagent -p` end to end: the real CLI in a subprocess, the real SDK, the fake API server."""

from __future__ import annotations

import json

import pytest

from fakeapi import FakeAnthropic, error, text, tool, turn


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def _print(run_cli, fake, project, prompt, *flags, input=None, memory=False):
    args = ["-C", str(project), "-p", prompt, *flags]
    if not memory:
        args.append("--no-memory")
    return run_cli(*args, env={"ANTHROPIC_BASE_URL": fake.url}, input=input)


def _results(request):
    """The tool_result blocks of the newest user message of a request the server received."""
    return [b for b in request["messages"][-1]["content"] if b.get("type") == "tool_result"]


def _transcript(project):
    files = list((project / ".transcripts").glob("*.jsonl"))
    assert len(files) == 1
    return [json.loads(line) for line in files[0].read_text().splitlines()]


def test_multi_step_task_writes_runs_and_answers(run_cli, fake, project):
    fake.add(
        tool("write_file", {"path": "hello.py", "content": "print('hello from hello.py')\n"}),
        turn("Now I run it.", tool("bash", {"command": "python3 hello.py"})),
        text("It prints `hello from hello.py`."),
    )
    result = _print(run_cli, fake, project, "write hello.py and run it", "--yes", memory=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "It prints `hello from hello.py`.\n"
    assert (project / "hello.py").read_text() == "print('hello from hello.py')\n"
    tool_lines = [line for line in result.stderr.splitlines() if line.startswith("• ")]
    assert tool_lines[0].startswith("• write_file(hello.py) → ")
    assert tool_lines[1] == "• bash(python3 hello.py) → hello from hello.py (+1 line)"
    assert "Traceback" not in result.stderr
    assert fake.errors == [] and fake.remaining == 0
    assert _results(fake.requests[2])[0]["content"].startswith("hello from hello.py")

    records = _transcript(project)
    assert records[0]["type"] == "session_start" and records[0]["cwd"] == str(project)
    messages = [r for r in records if r["type"] == "message"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert messages[-1]["content"] == [{"type": "text", "text": "It prints `hello from hello.py`."}]


def test_parallel_tool_calls_and_a_tool_error_go_back_in_order(run_cli, fake, project):
    (project / "a.txt").write_text("alpha\n")
    fake.add(
        turn(
            "Reading both.",
            tool("read_file", {"path": "a.txt"}, id="toolu_a"),
            tool("read_file", {"path": "missing.txt"}, id="toolu_b"),
        ),
        text("a says alpha; missing.txt does not exist"),
    )
    result = _print(run_cli, fake, project, "read a and missing")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "a says alpha; missing.txt does not exist\n"
    results = _results(fake.requests[1])
    assert [r["tool_use_id"] for r in results] == ["toolu_a", "toolu_b"]
    assert "alpha" in results[0]["content"] and not results[0].get("is_error")
    assert results[1]["is_error"] is True and "missing.txt" in results[1]["content"]
    lines = [line for line in result.stderr.splitlines() if line.startswith("• ")]
    assert lines[0].startswith("• read_file(a.txt) → ")
    assert lines[1].startswith("• read_file(missing.txt) ✗ ")
    assert "\x1b[" not in result.stderr  # stderr is a pipe: no colour codes
    assert fake.errors == []


def test_without_yes_write_file_is_refused_with_a_clear_message(run_cli, fake, project):
    fake.add(tool("write_file", {"path": "notes.txt", "content": "x"}), text("I need permission to write."))
    result = _print(run_cli, fake, project, "write notes.txt")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "I need permission to write.\n"
    assert not (project / "notes.txt").exists()
    refusal = _results(fake.requests[1])[0]
    assert refusal["is_error"] is True
    assert "needs the user's approval" in refusal["content"] and "--yes" in refusal["content"]
    assert fake.errors == []


def test_path_escape_is_refused(run_cli, fake, project):
    fake.add(tool("write_file", {"path": "../outside.txt", "content": "escaped"}), text("I may not write there."))
    result = _print(run_cli, fake, project, "write outside", "--yes")
    assert result.returncode == 0, result.stderr
    assert not (project.parent / "outside.txt").exists()
    refusal = _results(fake.requests[1])[0]
    assert refusal["is_error"] is True and "outside" in refusal["content"]
    assert fake.errors == []


def test_prompt_from_stdin(run_cli, fake, project):
    fake.add(text("Got it."))
    result = _print(run_cli, fake, project, "-", input="  summarise\nthe repo \n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Got it.\n"
    user_text = [b["text"] for b in fake.requests[0]["messages"][0]["content"] if b["type"] == "text"]
    assert "summarise\nthe repo" in user_text


def test_api_error_after_retries_is_one_line_and_exit_1(run_cli, fake, project):
    fake.add(error(529), error(529), error(529))  # the first try and the SDK's two retries
    result = _print(run_cli, fake, project, "hello")
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("memagent: "), result.stderr
    assert "overloaded" in lines[0].lower()
    assert len(fake.requests) == 3 and fake.remaining == 0


def test_missing_key_is_a_one_line_usage_error(run_cli, project):
    result = run_cli("-C", str(project), "-p", "hello", env={"ANTHROPIC_API_KEY": ""})
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("memagent: no API key") and "ANTHROPIC_API_KEY" in result.stderr


@pytest.mark.parametrize("prompt, stdin", [("", ""), ("-", "  \n")])
def test_empty_prompt_is_a_usage_error(run_cli, project, prompt, stdin):
    result = run_cli("-C", str(project), "-p", prompt, input=stdin)
    assert result.returncode == 2
    assert result.stderr.startswith("memagent: ") and "usage: memagent -p" in result.stderr


def test_chat_without_a_terminal_points_to_print_mode(run_cli, project):
    result = run_cli("-C", str(project), input="hello\n")
    assert result.returncode == 2
    assert result.stderr == "memagent: the interactive chat needs a terminal; use -p PROMPT (or -p - to read stdin)\n"


def test_missing_project_root_is_a_usage_error(run_cli, project):
    result = run_cli("-C", str(project / "nope"), "-p", "hi")
    assert result.returncode == 2
    assert result.stderr == f"memagent: project root {project / 'nope'} is not a directory\n"
