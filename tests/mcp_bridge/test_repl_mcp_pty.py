"""`/mcp` in the real REPL (a pseudo-terminal): the session's servers, their status and tools."""

from __future__ import annotations

import io
import json
import os
import re
import sys

import pexpect

from fakeapi import FakeAnthropic
from mcp_kit import TOY

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


def _repl(project, fake) -> pexpect.spawn:
    """The REPL in a pseudo-terminal against the fake API, its output kept for the failure report."""
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": fake.url,
        "TERM": "xterm-256color",
        "PROMPT_TOOLKIT_NO_CPR": "1",
    }
    child = pexpect.spawn(
        sys.executable,
        ["-m", "memagent", "-C", str(project), "--no-memory"],
        env=env,
        encoding="utf-8",
        dimensions=(40, 160),
        timeout=120,
    )
    child.logfile_read = io.StringIO()
    return child


def test_slash_mcp_shows_the_servers_of_the_session(isolated_env, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (isolated_env / "mcp.json").write_text(
        json.dumps({"mcpServers": {"toy": {"command": sys.executable, "args": [str(TOY), "stdio"]}}})
    )
    (isolated_env / "config.toml").write_text("mcp_startup_wait = 90\nmcp_connect_timeout = 90\n")
    with FakeAnthropic() as fake:
        child = _repl(project, fake)
        try:
            child.expect("❯")
            child.send("/mcp")
            child.expect_exact("/mcp")
            child.send("\r")
            child.expect(r"toy \[ready, 6 tools\] \(user\) stdio")
            child.expect("echo — Echo the text back")
            child.expect("❯")
            child.send("/exit\r")
            child.expect(pexpect.EOF)
        finally:
            if child.isalive():
                child.terminate(force=True)
            print(ANSI.sub("", child.logfile_read.getvalue())[-3000:])
    assert fake.requests == []


def test_an_mcp_prompt_typed_first_thing_waits_for_its_server_and_runs(isolated_env, tmp_path):
    from fakeapi import text
    from mcp_kit import COMPAT

    project = tmp_path / "project"
    project.mkdir()
    (isolated_env / "mcp.json").write_text(
        json.dumps({"mcpServers": {"docs": {"command": sys.executable, "args": [str(COMPAT)]}}})
    )
    (isolated_env / "config.toml").write_text("mcp_startup_wait = 90\nmcp_connect_timeout = 90\n")
    with FakeAnthropic([text("Reviewed.")]) as fake:
        child = _repl(project, fake)
        try:
            child.expect("❯")
            line = "/mcp__docs__review app.py naming"
            child.send(line)
            child.expect_exact(line)
            child.send("\r")
            child.expect("Reviewed.")
            child.expect("❯")
            child.send("/exit\r")
            child.expect(pexpect.EOF)
        finally:
            if child.isalive():
                child.terminate(force=True)
            print(ANSI.sub("", child.logfile_read.getvalue())[-3000:])
        first = fake.requests[0]["messages"][0]["content"][0]["text"]
    assert first == "Please review app.py with a focus on naming."
