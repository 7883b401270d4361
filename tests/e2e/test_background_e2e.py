"""Background shells through the real CLI against the fake Messages API: a long command started in
the background, its output read twice, killed; and nothing left running once memagent exits
(checked on the host's process table)."""

from __future__ import annotations

import os
import re
import time

import pexpect
import pytest

from fakeapi import FakeAnthropic, delay, text, tool
from process_kit import running
from repl_kit import PROMPT, expect_text

PTY_DIMENSIONS = (50, 160)


def results(body: dict) -> list[str]:
    found = []
    for block in body["messages"][-1]["content"]:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            content = block.get("content")
            found.append(content if isinstance(content, str) else "".join(b.get("text", "") for b in content or []))
    return found


def ticker(marker: str) -> str:
    return f"i=0; while true; do i=$((i+1)); echo tick-$i; sleep 0.3; done # {marker}"


def test_background_command_read_twice_then_killed(run_cli, project):
    marker = f"bge2e{os.getpid()}{time.monotonic_ns() % 10**8}"
    script = [
        tool("bash", {"command": ticker(marker), "run_in_background": True}),
        delay(2.0, tool("bash_output", {"bash_id": "bash_1"})),
        delay(2.0, tool("bash_output", {"bash_id": "bash_1"})),
        tool("kill_shell", {"shell_id": "bash_1"}),
        text("Stopped the ticker."),
    ]
    with FakeAnthropic(script) as fake:
        started = time.monotonic()
        done = run_cli(
            "-C", str(project), "--no-memory", "--yes", "-p", "run the ticker", env={"ANTHROPIC_BASE_URL": fake.url}
        )
        assert done.returncode == 0, done.stderr
        assert "Stopped the ticker." in done.stdout and fake.errors == []
        bodies = list(fake.requests)
    assert time.monotonic() - started < 60
    assert "Command running in background with ID: bash_1" in results(bodies[1])[0]
    first, second = results(bodies[2])[0], results(bodies[3])[0]
    assert "running for" in first and "running for" in second
    first_ticks, second_ticks = set(re.findall(r"tick-\d+", first)), set(re.findall(r"tick-\d+", second))
    assert first_ticks and second_ticks and not first_ticks & second_ticks
    assert max(int(t[5:]) for t in second_ticks) > max(int(t[5:]) for t in first_ticks)
    assert "Killed bash_1" in results(bodies[4])[0]
    assert running(marker) == []


@pytest.mark.parametrize("sandbox", [True, False])
def test_nothing_left_running_when_memagent_exits(run_cli, project, isolated_env, sandbox):
    (isolated_env / "config.toml").write_text(f"sandbox = {str(sandbox).lower()}\n")
    marker = f"bgexit{os.getpid()}{time.monotonic_ns() % 10**8}"
    script = [
        tool("bash", {"command": f"(sleep 300 & sleep 301 & wait) # {marker}", "run_in_background": True}),
        text("Left it running."),
    ]
    with FakeAnthropic(script) as fake:
        done = run_cli(
            "-C", str(project), "--no-memory", "--yes", "-p", "start and leave", env={"ANTHROPIC_BASE_URL": fake.url}
        )
        assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 10
    while running(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert running(marker) == []


def test_bashes_in_the_repl_lists_and_kills(spawn, fake, project):
    marker = f"bgrepl{os.getpid()}{time.monotonic_ns() % 10**8}"
    fake.add(tool("bash", {"command": f"sleep 300 # {marker}", "run_in_background": True}), text("Started."))
    child = spawn("--yes")
    child.expect(PROMPT)
    child.send("start a sleeper\r")
    expect_text(child, "Started.")
    child.expect(PROMPT)
    child.send("/bashes\r")
    expect_text(child, "bash_1  running for")
    child.expect(PROMPT)
    assert running(marker)
    child.send("/bashes kill bash_1\r")
    expect_text(child, "Killed bash_1")
    child.expect(PROMPT)
    deadline = time.monotonic() + 10
    while running(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert running(marker) == []
    child.send("/exit\r")
    child.expect(pexpect.EOF)
