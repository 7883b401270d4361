"""The REPL in a real pty: the trust prompt for a project file asking for widening settings
(a "no" is remembered), an "always" answer saved as a rule for the project, /permissions, and
an input history on disk without the token typed at the prompt."""

from __future__ import annotations

import io
import json
import re
import stat
import sys

import pexpect
import pytest
from fakeapi import FakeAnthropic, text, tool

PROMPT = "❯"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")
TOKEN = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0" * 2


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def spawn(cli_env, project, fake):
    children = []

    def start() -> pexpect.spawn:
        env = {**cli_env, "ANTHROPIC_BASE_URL": fake.url, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1"}
        child = pexpect.spawn(sys.executable, ["-m", "memagent", "-C", str(project), "--no-memory"], env=env,
                              encoding="utf-8", dimensions=(40, 160), timeout=40)
        child.logfile_read = io.StringIO()
        children.append(child)
        return child

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)
        print(ANSI.sub("", child.logfile_read.getvalue())[-4000:])


def submit(child: pexpect.spawn, line: str) -> None:
    child.send(line)
    child.expect_exact(line[-20:])
    child.send("\r")


def test_trust_prompt_saved_rule_permissions_and_private_history(spawn, fake, project, isolated_env):
    (project / ".memagent.toml").write_text('chroma_url = "http://127.0.0.1:9"\n')
    fake.add(tool("bash", {"command": "touch a.txt"}), text("touched"))
    child = spawn()
    child.expect("asks for: chroma_url")
    child.expect(r"Trust this project .*\[y/N\]")
    child.send("n\r")
    child.expect("not trusted")
    child.expect(PROMPT)
    submit(child, f"use {TOKEN} and touch a.txt")
    child.expect("bash wants to run: touch a.txt")
    child.expect(r"Allow\?")
    child.send("a")
    child.expect(r"Bash\(touch a.txt\) saved for this project")
    child.expect("touched")
    child.expect(PROMPT)
    submit(child, "/permissions")
    child.expect("mode: default")
    child.expect(r"allow: Bash\(touch a.txt\)")
    child.expect(PROMPT)
    submit(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and (project / "a.txt").exists()

    history = isolated_env / "history"
    assert TOKEN.encode() not in history.read_bytes() and b"[REDACTED:github-token]" in history.read_bytes()
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    record = json.loads((isolated_env / "projects.json").read_text())["projects"][str(project)]
    assert record == {"trusted": False, "declined": ["chroma_url"], "allow": ["Bash(touch a.txt)"]}

    # a second start does not ask again, and the saved rule is in force
    child = spawn()
    child.expect(PROMPT)
    submit(child, "/permissions")
    child.expect(r"allow: Bash\(touch a.txt\)")
    child.expect(PROMPT)
    assert "Trust this project" not in ANSI.sub("", child.logfile_read.getvalue())
    submit(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and fake.errors == []
