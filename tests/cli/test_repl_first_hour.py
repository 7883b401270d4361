"""The REPL as a newcomer meets it, in a real pseudo-terminal against the fake API: a bare prompt
as the first message, the status line, collapsed pastes, Esc, Ctrl-C twice, the resume recap
and the session picker."""

from __future__ import annotations

import subprocess
import sys

import pexpect

from fakeapi import delay, text
from repl_kit import PROMPT

PTY_DIMENSIONS = (40, 140)


def _user_texts(request) -> list[str]:
    return [b.get("text", "") for b in request["messages"][-1]["content"] if b.get("type") == "text"]


def _wait_exit(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF, timeout=90)  # quitting while the session opens waits for it (slow on a busy machine)
    child.close()
    return child.exitstatus


def test_bare_prompt_is_the_first_message_status_line_and_ctrl_c_twice_quits(spawn, fake):
    fake.add(text("The bug is in parse()."))
    child = spawn("fix the bug in parse")
    child.expect("The bug is in parse")
    child.expect("claude-sonnet-5-5 · ask before tools · context ")  # the status line
    child.expect(r"\$\d+\.\d{3}")
    child.sendintr()  # Ctrl-C on an empty prompt: a hint, not an exit
    child.expect("Ctrl-C again to exit")
    child.expect(PROMPT)
    assert child.isalive()
    child.sendintr()
    assert _wait_exit(child) == 0
    assert fake.errors == [] and len(fake.requests) == 1
    assert "fix the bug in parse" in _user_texts(fake.requests[0])


def test_yes_shows_auto_approve_and_a_large_paste_is_collapsed_but_sent_whole(spawn, fake):
    fake.add(text("Got all of it."))
    child = spawn("--yes")
    child.expect("every tool call runs without asking")
    child.expect("auto-approve")
    child.expect(PROMPT)
    pasted = "\n".join(f"line {n} of the log" for n in range(240))
    child.send("\x1b[200~" + pasted + "\x1b[201~")
    child.send("\r")
    child.expect(r"\[pasted 240 lines\]")
    child.expect("Got all of it.")
    child.sendeof()
    assert _wait_exit(child) == 0
    sent = "\n".join(_user_texts(fake.requests[0]))
    assert "line 0 of the log" in sent and "line 239 of the log" in sent
    log = child.logfile_read.getvalue()
    assert "line 120 of the log" not in log.split("[pasted 240 lines]", 1)[1]  # not echoed again


def test_esc_interrupts_a_turn_and_the_next_turn_works(spawn, fake):
    fake.add(delay(30, text("too late")), text("Here again."))
    child = spawn()
    child.expect(PROMPT)
    child.send("think for a long time\r")
    child.expect("Thinking")
    child.send("\x1b")  # Esc
    child.expect("cancelled", timeout=10)
    child.expect(PROMPT)
    child.send("still there?\r")
    child.expect("Here again.")
    child.sendeof()
    assert _wait_exit(child) == 0
    assert fake.errors == []
    assert "still there?" in _user_texts(fake.requests[1])


def test_exit_while_the_session_is_still_opening_closes_cleanly(spawn):
    child = spawn(memory=True)  # memory makes opening slower
    child.expect(PROMPT)
    child.sendeof()
    assert _wait_exit(child) == 0
    assert "Traceback" not in child.logfile_read.getvalue()


def _previous_session(run_cli, project, fake, question: str, answer: str) -> str:
    fake.add(text(answer))
    done = run_cli("-C", str(project), "-p", question, "--no-memory", env={"ANTHROPIC_BASE_URL": fake.url})
    assert done.returncode == 0, done.stderr
    newest = max((project / ".transcripts").glob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
    return newest.stem


def test_continue_shows_the_last_exchanges_and_where_it_stopped(spawn, fake, run_cli, project):
    _previous_session(run_cli, project, fake, "how do I run the tests?", "Use pytest -q in the root.")
    child = spawn("-c")
    child.expect("resumed from")
    child.expect("you: how do I run the tests\\?")
    child.expect("memagent: Use pytest -q in the root.")
    child.expect("It stopped after the answer above")
    child.sendeof()
    assert _wait_exit(child) == 0


def test_resume_without_an_id_offers_a_picker(spawn, fake, run_cli, project):
    older = _previous_session(run_cli, project, fake, "older question", "older answer")
    _previous_session(run_cli, project, fake, "newer question", "newer answer")
    child = spawn("-r")
    child.expect("Recent sessions:")
    child.expect("1. .*newer question")
    child.expect("2. .*older question")
    child.expect("Resume which session\\?")
    child.send("2\r")
    child.expect(f"resumed from {older}")
    child.expect("you: older question")
    child.sendeof()
    assert _wait_exit(child) == 0


def test_resume_picker_needs_a_terminal(cli_env, project):
    result = subprocess.run(
        [sys.executable, "-m", "memagent", "-C", str(project), "-r"],
        env=cli_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().startswith("memagent: -r needs a session id") and "Traceback" not in result.stderr
