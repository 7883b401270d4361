"""`memagent sessions list|show` over real transcripts."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from context.ctx_harness import PlannedBrain, new_harness
from memagent.cli.main import app
from memagent.context.sessions import list_sessions
from memagent.llm.scripted import reply, tool_call

runner = CliRunner()


def make_project(tmp_path):
    brain = PlannedBrain()
    harness = new_harness(tmp_path, brain, threshold=3_000, session_id="20261121-100000-aaaa")
    for number in range(5):
        brain.add(reply("Reading.", tool_call("read_file", {"path": f"src/m{number}.py"})), reply(f"m{number} fine"))
        harness.turn(f"Check module m{number} for the retry bug\nsecond line")
    harness.writer.close()
    other = new_harness(tmp_path, PlannedBrain(), session_id="20261121-110000-bbbb")
    other.turn("What does the parser do?")
    other.writer.close()
    return harness


def test_list_sessions_counts_turns_and_compactions(tmp_path):
    make_project(tmp_path)
    first, second = list_sessions(tmp_path / ".transcripts")
    assert first.id == "20261121-100000-aaaa" and first.turns == 5 and first.compactions >= 1
    assert first.first_user_line == "Check module m0 for the retry bug"
    assert first.model == "main-model" and first.started <= first.last_activity
    assert second.turns == 1 and second.compactions == 0


def test_cli_list_table_and_json(tmp_path):
    make_project(tmp_path)
    result = runner.invoke(app, ["sessions", "list", "-C", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:4] == ["id", "kind", "start", "last"]  # sessions carry their kind
    assert lines[1].startswith("20261121-110000-bbbb") and lines[2].startswith("20261121-100000-aaaa")  # newest first
    assert "Check module m0 for the retry bug" in result.output
    result = runner.invoke(app, ["-C", str(tmp_path), "sessions", "--json"])
    rows = json.loads(result.output)
    assert [r["id"] for r in rows] == ["20261121-110000-bbbb", "20261121-100000-aaaa"]
    assert rows[1]["turns"] == 5 and rows[1]["compactions"] >= 1


def test_cli_show_renders_roles_tools_and_compactions(tmp_path):
    make_project(tmp_path)
    result = runner.invoke(app, ["sessions", "show", "20261121-1000", "-C", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "you #1" in result.output and "memagent #2" in result.output
    assert '⚙ read_file {"path": "src/m0.py"}' in result.output
    assert "↳ read_file result" in result.output and "FILE src/m0.py" in result.output
    assert "compacted:" in result.output and "the summary of the dropped part" in result.output
    result = runner.invoke(app, ["sessions", "show", "20261121-100000-aaaa", "--json", "-C", str(tmp_path)])
    data = json.loads(result.output)
    assert data["id"] == "20261121-100000-aaaa"
    assert {r["type"] for r in data["records"]} >= {"session_start", "message", "compaction"}


def test_cli_unknown_id_is_one_line_and_exit_1(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "memagent", "sessions", "show", "nope", "-C", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 1
    assert completed.stdout == ""
    assert completed.stderr.count("\n") == 1 and completed.stderr.startswith("memagent: no session 'nope'")
    empty = runner.invoke(app, ["sessions", "-C", str(tmp_path)])
    assert empty.exit_code == 0 and "No sessions" in empty.output


def test_damaged_transcripts_are_listed_and_shown_with_warnings(tmp_path):
    directory = tmp_path / ".transcripts"
    directory.mkdir()
    good = json.dumps(
        {"type": "message", "id": "1", "role": "user", "content": [{"type": "text", "text": "fix the parser"}]}
    )
    (directory / "20261121-090000-aaaa.jsonl").write_text(good + '\n{"type": "mess')
    (directory / "20261121-100000-bbbb.jsonl").mkdir()  # unreadable as a file
    rows = {info.id: info for info in list_sessions(directory)}
    assert rows["20261121-090000-aaaa"].first_user_line == "fix the parser" and rows["20261121-090000-aaaa"].warnings
    assert (
        rows["20261121-100000-bbbb"].warnings
        and "20261121-100000-bbbb.jsonl" in rows["20261121-100000-bbbb"].warnings[0]
    )
    shown = subprocess.run(
        [sys.executable, "-m", "memagent", "sessions", "show", "20261121-09", "-C", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0 and "fix the parser" in shown.stdout
    assert "skipped an unreadable line" in shown.stderr
    broken = subprocess.run(
        [sys.executable, "-m", "memagent", "sessions", "show", "20261121-10", "-C", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert broken.returncode == 1 and broken.stderr.startswith("memagent: cannot read transcript")
    assert "20261121-100000-bbbb.jsonl" in broken.stderr and broken.stderr.count("\n") == 1
