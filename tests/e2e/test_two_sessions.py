"""Two sessions through the real CLI and the loopback fake Messages API: the second one starts
where the first stopped — the ready tasks, the last session's summary, and only the corrected
preference."""

from __future__ import annotations

import re

import pytest

from fakeapi import FakeAnthropic, text, tool
from memagent.markers import Marker, kind_of

OLD = "The user wants an indentation width of 2 spaces in this project's Python code"
NEW = "The user wants an indentation width of 4 spaces in this project's Python code"


def _texts(blocks) -> list[str]:
    return [b["text"] for b in blocks if b.get("type") == "text"]


@pytest.mark.timeout(400)  # two real CLI runs with memory on: slow on a loaded machine
def test_the_second_session_starts_with_tasks_summary_and_the_corrected_preference(run_cli, project):
    env = {"MEMAGENT_AUTO_EXTRACT": "false"}  # only explicit saves: the fake API scripts every call
    first = [
        tool("task_create", {"subject": "Write the parser"}, id="t1"),
        tool("task_create", {"subject": "Write the evaluator", "blockedBy": [1]}, id="t2"),
        tool("task_update", {"task_id": 1, "status": "completed"}, id="t3"),
        tool("memory_save", {"content": OLD, "memory_type": "preference", "confidence": 0.95}, id="m1"),
        tool("memory_save", {"content": NEW, "memory_type": "preference", "confidence": 0.95}, id="m2"),
        text("The parser is done; the evaluator comes next."),
    ]
    with FakeAnthropic(first) as fake:
        result = run_cli(
            "-C",
            str(project),
            "-p",
            "finish the parser; I want 4-space indents, not 2",
            "--yes",
            env={**env, "ANTHROPIC_BASE_URL": fake.url},
            timeout=180,
        )
        assert result.returncode == 0, result.stderr
        assert fake.errors == [] and fake.remaining == 0
        saved = [b for b in fake.requests[-1]["messages"][-1]["content"] if b.get("type") == "tool_result"]
        assert not saved[0].get("is_error"), saved

    with FakeAnthropic([text("Use 4 spaces.")]) as fake:
        result = run_cli(
            "-C",
            str(project),
            "-p",
            "how wide should the indentation of the Python code be?",
            env={**env, "ANTHROPIC_BASE_URL": fake.url},
            timeout=180,
        )
        assert result.returncode == 0, result.stderr
        assert fake.errors == []
        request = fake.requests[0]
    newest = request["messages"][-1]["content"]
    continuity = [t for t in _texts(newest) if kind_of(t) is Marker.CONTINUITY]
    assert len(continuity) == 1
    assert "#2 Write the evaluator" in continuity[0] and "Ready" in continuity[0]
    assert "finish the parser" in continuity[0]  # what the last session was asked
    assert "the evaluator comes next" in continuity[0]  # where it stopped
    everything = "\n".join(_texts(newest) + _texts(request["system"]))
    assert "4 spaces" in everything  # the corrected preference reached the model
    # the old value is gone as a memory of its own: it is shown only as what the new card corrects
    outside_history = re.sub(r'\(corrects \[Memory#\w+\][^"]*"[^"]*"\)', "", everything)
    assert "2 spaces" not in outside_history.replace("not 2", "")
    assert re.search(r'4 spaces[^\n]*\(corrects \[Memory#\w+\][^"]*"[^"]*2 spaces', everything)
