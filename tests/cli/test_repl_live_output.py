"""The REPL in a real pty: a long bash call shows its newest output lines live, a collapsed
result can be expanded afterwards, and control sequences from tool output never reach the
terminal raw."""

from __future__ import annotations

import io
import re
import sys

import pexpect
import pytest

from fakeapi import FakeAnthropic, text, tool

PROMPT = "❯"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


def styled(text: str) -> str:
    """A pattern for ``text`` as shown on screen, where styles may put escape codes between characters."""
    return r"(?:\x1b\[[0-9;?]*[A-Za-z])*".join(re.escape(char) for char in text)


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def spawn(cli_env, project, fake) -> pexpect.spawn:
    env = {**cli_env, "ANTHROPIC_BASE_URL": fake.url, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1"}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "memagent", "-C", str(project), "--no-memory", "--yes"],
        env=env,
        encoding="utf-8",
        dimensions=(40, 120),
        timeout=30,
    )
    child.logfile_read = io.StringIO()
    return child


def test_long_bash_call_streams_live_then_expands(cli_env, project, fake):
    command = "for i in 1 2 3; do echo step-$i; sleep 0.7; done; printf 'evil\\033]0;pwned\\007\\n'; echo finished"
    fake.add(tool("bash", {"command": command}, id="toolu_live"), text("All steps ran."))
    child = spawn(cli_env, project, fake)
    try:
        child.expect(PROMPT)
        child.send("run the steps")
        child.expect_exact("run the steps")
        child.send("\r")
        child.expect(styled("● bash(for i"))
        child.expect("step-2")  # shown while the command still runs …
        child.expect(r"Running bash… \d+s")
        shown = ANSI.sub("", child.before)
        assert "⎿" not in shown and "finished" not in shown  # … before it ends and its result line
        child.expect(styled("⎿ step-1 (+5 lines, /expand)"))
        child.expect("All steps ran.")
        child.expect(PROMPT)
        child.send("/expand\r")
        child.expect(r"── bash\(for i in 1 2 3")
        child.expect("step-3")
        child.expect(re.escape("evil\\x1b]0;pwned\\x07"))  # escaped, visible, harmless
        child.expect("finished")
        child.expect(PROMPT)
        child.send("/exit\r")
        child.expect(pexpect.EOF)
        screen = child.logfile_read.getvalue()
        assert "\x1b]0;pwned" not in screen  # never sent to the terminal raw
    finally:
        if child.isalive():
            child.terminate(force=True)
        print(ANSI.sub("", child.logfile_read.getvalue())[-3000:])
    assert fake.errors == []
