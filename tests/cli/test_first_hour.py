"""What a newcomer meets outside the REPL: ids as printed, empty input, broken config, long
session lists, labels in transcripts, refusals printed whole, lost history in the exit code."""

from __future__ import annotations

import json
import shutil

from fakeapi import FakeAnthropic, text, tool
from memagent.cli.chat import close_session
from memagent.cli.sessions import message_label
from memagent.llm.items import injected
from memagent.llm.scripted import ScriptedModel, reply
from memagent.markers import Marker
from memagent.runtime import SessionOptions, open_session


def test_tasks_accept_ids_as_printed_and_refuse_an_empty_subject(run_cli, project):
    assert run_cli("tasks", "-C", str(project), "add", "first").returncode == 0
    shown = run_cli("tasks", "-C", str(project), "show", "#1")
    assert shown.returncode == 0 and "task 1: first" in shown.stdout  # printed plain: # is a shell comment
    assert run_cli("tasks", "-C", str(project), "done", "#1").returncode == 0
    empty = run_cli("tasks", "-C", str(project), "add", "  ")
    assert empty.returncode == 2
    assert empty.stderr.strip() == 'memagent: the task subject is empty; usage: memagent tasks add "SUBJECT"'
    bad = run_cli("tasks", "-C", str(project), "show", "#x")
    assert bad.returncode == 2 and "is not a task id" in bad.stderr and bad.stderr.count("\n") == 1


def test_check_after_fix_names_the_unreadable_file_instead_of_suggesting_fix(run_cli, project):
    assert run_cli("tasks", "-C", str(project), "add", "ok").returncode == 0
    (project / ".tasks" / "task_7.json").write_text("{broken")
    for args in (["check", "--fix"], ["check"]):
        result = run_cli("tasks", "-C", str(project), *args)
        assert result.returncode == 1
        assert "check --fix" not in result.stdout
        assert "task_7.json" in result.stdout and "delete it" in result.stdout


def test_check_without_fix_still_suggests_fix_for_repairable_edges(run_cli, project):
    tasks = project / ".tasks"
    assert run_cli("tasks", "-C", str(project), "add", "a").returncode == 0
    data = json.loads((tasks / "task_1.json").read_text())
    data["blockedBy"] = [9]
    (tasks / "task_1.json").write_text(json.dumps(data))
    result = run_cli("tasks", "-C", str(project), "check")
    assert result.returncode == 1 and "Run `memagent tasks check --fix`" in result.stdout


def test_doctor_exits_1_with_the_reason_when_the_config_is_broken(run_cli, project):
    (project / ".memagent.toml").write_text('modle = "x"\n')
    result = run_cli("doctor", "--no-memory", "-C", str(project))
    assert result.returncode == 1
    assert "modle" in result.stderr and result.stderr.startswith("memagent: ")
    (project / ".memagent.toml").write_text('model = "claude-haiku-4-5"\n')
    assert run_cli("doctor", "--no-memory", "-C", str(project)).returncode == 0


def _session_file(directory, index: int, first_line: str) -> None:
    stamp = f"2026-11-{10 + index // 60:02d}T10:{index % 60:02d}:00+00:00"
    sid = f"202611{10 + index // 60:02d}-10{index % 60:02d}00-{index:04x}"
    records = [
        {"type": "session_start", "time": stamp, "session_id": sid, "model": "m"},
        {
            "type": "message",
            "time": stamp,
            "id": "1",
            "role": "user",
            "content": [{"type": "text", "text": first_line}],
        },
    ]
    (directory / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_sessions_list_has_a_limit_and_says_how_many_more(run_cli, project):
    transcripts = project / ".transcripts"
    transcripts.mkdir()
    for index in range(25):
        _session_file(transcripts, index, f"question {index}")
    result = run_cli("sessions", "-C", str(project), "list")
    assert result.returncode == 0
    rows = [line for line in result.stdout.splitlines() if "question" in line]
    assert len(rows) == 20 and "question 24" in rows[0]  # newest first
    assert "… 5 more older sessions (--limit 0 shows all)" in result.stdout
    three = run_cli("sessions", "-C", str(project), "list", "--limit", "3", "--json")
    assert [s["first_user_line"] for s in json.loads(three.stdout)] == ["question 24", "question 23", "question 22"]
    every = run_cli("sessions", "-C", str(project), "list", "--limit", "0")
    assert len([line for line in every.stdout.splitlines() if "question" in line]) == 25
    assert "more older" not in every.stdout


def test_tool_results_are_labelled_as_such_in_a_transcript():
    assert message_label({"role": "user", "content": [{"type": "text", "text": "hi"}]}) == "you"
    results = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}
    assert message_label(results) == "tool results"
    reminder = injected(Marker.REMINDER, "<reminder>todo</reminder>")  # memagent's own text, marked as such
    reminded = {"role": "user", "content": [*results["content"], reminder]}
    assert message_label(reminded) == "tool results"
    typed = {"role": "user", "content": [*results["content"], {"type": "text", "text": "<reminder>mine</reminder>"}]}
    assert message_label(typed) == "you"  # the user's own words, however they open
    assert message_label({"role": "assistant", "content": []}) == "memagent"


def test_sessions_show_labels_tool_results(run_cli, project):
    fake_steps = [tool("read_file", {"path": "a.txt"}), text("done")]
    (project / "a.txt").write_text("alpha\n")
    with FakeAnthropic(fake_steps) as fake:
        ran = run_cli(
            "-C", str(project), "-p", "read a.txt", "--yes", "--no-memory", env={"ANTHROPIC_BASE_URL": fake.url}
        )
    assert ran.returncode == 0, ran.stderr
    sid = next((project / ".transcripts").glob("*.jsonl")).stem
    shown = run_cli("sessions", "-C", str(project), "show", sid[:12])
    assert "tool results #3" in shown.stdout and "you #3" not in shown.stdout


def test_the_print_mode_refusal_names_the_flag(run_cli, project):
    with FakeAnthropic([tool("bash", {"command": "ls"}), text("I could not run it.")]) as fake:
        result = run_cli("-C", str(project), "-p", "list files", "--no-memory", env={"ANTHROPIC_BASE_URL": fake.url})
    assert result.returncode == 0
    refusal = next(line for line in result.stderr.splitlines() if line.startswith("• bash"))
    assert "--yes" in refusal and "…" not in refusal


def test_lost_transcript_records_make_the_exit_code_1(tmp_path, capsys):
    root = tmp_path / "project"
    root.mkdir()
    session = open_session(SessionOptions(root=root, memory=False), model=ScriptedModel([reply("hi there")]))
    shutil.rmtree(root / ".transcripts")
    (root / ".transcripts").write_text("a file where the folder was")  # every later write fails
    list(session.agent.run_turn("hello"))
    assert close_session(session) == 1
    assert "transcript records could not be written" in capsys.readouterr().err


def test_a_healthy_session_closes_with_0(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    session = open_session(SessionOptions(root=root, memory=False), model=ScriptedModel([reply("hi")]))
    list(session.agent.run_turn("hello"))
    assert close_session(session) == 0
