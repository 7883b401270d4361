"""Sessions carry their kind; throw-away headless runs (``memagent -p hi``) never displace the
interactive session that did the work: not for ``-c``, not for the ``-r`` picker, not for the
next session's hand-over. Each says which session it chose. The real CLI, the REPL in a pty."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pexpect
import pytest

from fakeapi import text, tool
from repl_kit import PROMPT, expect_text


def _headless(run_cli, project, fake, *args: str, steps=None) -> None:
    fake.add(*(steps or [text("Hello!")]))
    done = run_cli("-C", str(project), "--no-memory", *args, env={"ANTHROPIC_BASE_URL": fake.url})
    assert done.returncode == 0, done.stderr


def _sessions(run_cli, project, *args: str) -> list[dict]:
    listed = run_cli("-C", str(project), "sessions", "list", "--json", *args)
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


def _copies(project, source: str, count: int) -> None:
    """``count`` more throw-away transcripts like ``source``, each newer than the last."""
    path = project / ".transcripts" / f"{source}.jsonl"
    text_of = path.read_text()
    started = datetime.strptime(source[:15], "%Y%m%d-%H%M%S")
    for number in range(count):  # the next seconds: a copy sorts after its source, as a later run would
        copy = (started + timedelta(seconds=number + 1)).strftime("%Y%m%d-%H%M%S-") + source[-4:]
        (project / ".transcripts" / f"{copy}.jsonl").write_text(text_of.replace(source, copy))


@pytest.mark.timeout(300)
def test_continue_and_the_handover_skip_throwaway_runs_and_say_which_session_they_chose(spawn, fake, run_cli, project):
    fake.add(
        tool("write_file", {"path": "parser.py", "content": "def parse(text):\n    return text.split()\n"}),
        text("I wrote parser.py."),
    )
    child = spawn()
    child.expect(PROMPT)
    child.send("write the parser\r")
    child.expect("Allow\\?")
    child.send("y")
    expect_text(child, "I wrote parser.py.")
    child.expect(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert (project / "parser.py").exists()
    [worked] = _sessions(run_cli, project)
    assert worked["kind"] == "interactive" and worked["tool_calls"] == 1 and worked["did_work"] is True
    for _ in range(2):
        _headless(run_cli, project, fake, "-p", "hi")

    fake.add(text("We wrote the parser."))
    resumed = run_cli(
        "-C", str(project), "--no-memory", "-c", "-p", "what did we do?", env={"ANTHROPIC_BASE_URL": fake.url}
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"continuing session {worked['id']} (interactive, 1 turn, 1 tool call" in resumed.stderr
    assert "skipped 2 newer headless runs" in resumed.stderr
    sent = json.dumps(fake.requests[-1]["messages"])
    assert "write the parser" in sent and "parser.py" in sent

    # a new REPL hands over from the session that did work (now the resumed one, which did too)
    fake.add(text("Carrying on."))
    child = spawn()
    child.expect("picking up from session \\d{8}-\\d{6}-[0-9a-f]{4} \\(headless, 1 turn, 1 tool call")
    child.expect(PROMPT)
    child.send("carry on\r")
    expect_text(child, "Carrying on.")
    child.sendeof()
    child.expect(pexpect.EOF)
    note = [b["text"] for b in fake.requests[-1]["messages"][-1]["content"] if "previous session" in b.get("text", "")]
    assert note and "what did we do?" in note[0]


def test_the_handover_passes_over_throwaway_runs(spawn, fake, run_cli, project):
    steps = [tool("write_file", {"path": "notes.txt", "content": "notes\n"}), text("Created notes.txt.")]
    _headless(run_cli, project, fake, "--yes", "-p", "create notes.txt", steps=steps)
    worked = _sessions(run_cli, project)[0]["id"]
    _headless(run_cli, project, fake, "-p", "hi")
    _copies(project, _sessions(run_cli, project)[0]["id"], 3)
    fake.add(text("Carrying on."))
    child = spawn()
    child.expect(f"picking up from session {worked} \\(headless, 1 turn, 1 tool call.*skipped 4 newer headless runs")
    child.expect(PROMPT)
    child.send("go on\r")
    expect_text(child, "Carrying on.")
    child.sendeof()
    child.expect(pexpect.EOF)
    note = [b["text"] for b in fake.requests[-1]["messages"][-1]["content"] if "previous session" in b.get("text", "")]
    assert note and worked in note[0] and "create notes.txt" in note[0]


def test_sessions_list_shows_and_filters_kinds(fake, run_cli, project):
    steps = [tool("write_file", {"path": "notes.txt", "content": "notes\n"}), text("Created.")]
    _headless(run_cli, project, fake, "--yes", "-p", "create notes.txt", steps=steps)
    _headless(run_cli, project, fake, "-p", "hi")
    rows = _sessions(run_cli, project)
    assert [(r["kind"], r["did_work"], r["tool_calls"]) for r in rows] == [
        ("headless", False, 0),
        ("headless", True, 1),
    ]
    assert _sessions(run_cli, project, "--kind", "interactive") == []
    assert len(_sessions(run_cli, project, "--kind", "headless")) == 2
    table = run_cli("-C", str(project), "sessions", "list")
    assert table.stdout.splitlines()[0].split()[:2] == ["id", "kind"] and "headless" in table.stdout
    bad = run_cli("-C", str(project), "sessions", "list", "--kind", "robot")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1 and "--kind must be one of" in bad.stderr


@pytest.mark.timeout(300)
def test_the_picker_lists_the_session_that_did_work_before_a_flood_of_throwaway_runs(spawn, fake, run_cli, project):
    steps = [tool("write_file", {"path": "notes.txt", "content": "notes\n"}), text("Created.")]
    _headless(run_cli, project, fake, "--yes", "-p", "create notes.txt", steps=steps)  # headless, but it worked
    first = _sessions(run_cli, project)[0]["id"]
    _headless(run_cli, project, fake, "-p", "hi there")
    _copies(project, _sessions(run_cli, project)[0]["id"], 10)
    child = spawn("-r")
    child.expect("Recent sessions:")
    child.expect(f"1. {first} .*headless .*create notes.txt")
    child.expect("2. .*hi there")
    child.expect("older session")
    child.expect("Resume which session\\?")
    child.send("\r")
    child.expect(f"resumed from {first}")
    child.sendeof()
    child.expect(pexpect.EOF)
