"""`memagent -p --output-format json|stream-json` and `--max-turns`: the real CLI, SDK and fake API."""

from __future__ import annotations

import json

import pytest

from fakeapi import FakeAnthropic, error, text, tool, turn


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def _run(run_cli, fake, project, *flags, prompt="hello"):
    return run_cli("-C", str(project), "--no-memory", "-p", prompt, *flags, env={"ANTHROPIC_BASE_URL": fake.url})


def test_stream_json_is_one_event_per_line_from_init_to_result(run_cli, fake, project):
    (project / "notes.txt").write_text("alpha\n")
    fake.add(
        turn("Let me look.", tool("read_file", {"path": "notes.txt"}, id="toolu_read")),
        text("The file says alpha."),
    )
    result = _run(run_cli, fake, project, "--output-format", "stream-json", prompt="what is in notes.txt?")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]  # every line is one JSON object
    assert [e["type"] for e in events] == ["system", "assistant", "assistant", "user", "assistant", "result"]
    init, said, use, outcome, answer, final = events
    assert init["subtype"] == "init" and init["session_id"] and "read_file" in init["tools"]
    assert init["model"] == "claude-sonnet-5-5"
    assert said["message"]["content"] == [{"type": "text", "text": "Let me look."}]
    assert use["message"]["content"] == [
        {"type": "tool_use", "id": "toolu_read", "name": "read_file", "input": {"path": "notes.txt"}}
    ]
    [block] = outcome["message"]["content"]
    assert block["tool_use_id"] == "toolu_read" and "alpha" in block["content"] and block["is_error"] is False
    assert answer["message"]["content"] == [{"type": "text", "text": "The file says alpha."}]
    assert final["subtype"] == "success" and final["is_error"] is False
    assert final["result"] == "The file says alpha." and final["session_id"] == init["session_id"]
    assert final["num_turns"] == 2
    transcript = project / ".transcripts" / f"{init['session_id']}.jsonl"
    assert transcript.is_file()


def test_json_prints_one_result_object_with_usage_and_cost(run_cli, fake, project):
    fake.add(text("Forty-two."))
    result = _run(run_cli, fake, project, "--output-format", "json")
    assert result.returncode == 0, result.stderr
    [line] = result.stdout.splitlines()
    obj = json.loads(line)
    assert obj["type"] == "result" and obj["subtype"] == "success" and obj["is_error"] is False
    assert obj["result"] == "Forty-two." and obj["num_turns"] == 1 and obj["error"] is None
    assert obj["session_id"] and isinstance(obj["duration_ms"], int) and obj["duration_ms"] >= 0
    usage = obj["usage"]
    request = fake.requests[0]
    assert usage["output_tokens"] > 0
    assert usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"] > 0
    assert set(usage) == {"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"}
    expected = (
        usage["input_tokens"] * 3
        + usage["output_tokens"] * 15
        + usage["cache_creation_input_tokens"] * 3.75
        + usage["cache_read_input_tokens"] * 0.3
    ) / 1e6  # Sonnet list prices
    assert obj["total_cost_usd"] == pytest.approx(expected, rel=1e-3)
    assert request["model"] == obj["model"]


def test_a_failed_turn_is_an_error_object_and_exit_1(run_cli, fake, project):
    fake.add(error(400, "bad things"))
    result = _run(run_cli, fake, project, "--output-format", "json")
    assert result.returncode == 1
    obj = json.loads(result.stdout)
    assert obj["is_error"] is True and obj["subtype"] == "error_during_execution"
    assert "bad things" in obj["error"]
    assert result.stderr.startswith("memagent: ") and result.stderr.count("\n") == 1


def test_max_turns_stops_the_loop_and_exits_1(run_cli, fake, project):
    fake.add(*[tool("glob", {"pattern": "*"}) for _ in range(3)], text("never reached"))
    result = _run(run_cli, fake, project, "--yes", "--max-turns", "2", "--output-format", "stream-json")
    assert result.returncode == 1
    final = json.loads(result.stdout.splitlines()[-1])
    assert final["subtype"] == "error_max_turns" and final["is_error"] is True and final["num_turns"] == 2
    assert len(fake.requests) == 2
    assert "stopped after 2 model calls" in result.stderr


def test_text_is_still_the_default(run_cli, fake, project):
    fake.add(text("plain answer"))
    result = _run(run_cli, fake, project)
    assert result.returncode == 0 and result.stdout == "plain answer\n"


@pytest.mark.parametrize(
    "flags, message",
    [
        (["-p", "hi", "--output-format", "xml"], "--output-format must be one of text, json, stream-json, not 'xml'"),
        (["--output-format", "json"], "--output-format and --max-turns go with -p PROMPT"),
        (["-p", "hi", "--max-turns", "0"], "--max-turns"),
    ],
)
def test_usage_errors_exit_2_with_one_line(run_cli, project, flags, message):
    result = run_cli("-C", str(project), *flags)
    assert result.returncode == 2
    assert result.stderr.startswith("memagent: ") and message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
