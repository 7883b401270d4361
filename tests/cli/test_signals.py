"""SIGTERM and SIGHUP to memagent while a bash call runs: memagent exits with 128 + the signal,
and no process the command started is left running (print mode and the REPL in a pty)."""

from __future__ import annotations

import io
import signal
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest
from fakeapi import FakeAnthropic, text, tool


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def pids_running(token: str) -> list[int]:
    """Host pids whose command line starts with ``token`` (sandboxed commands live in their own
    PID namespace, so their pids are looked up on the host by command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if cmdline.startswith(token) and state != "Z":
                found.append(int(entry.name))
    return found


def wait_for(predicate, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_print_mode_sigterm_kills_the_running_command(cli_env, project, fake):
    signum = signal.SIGTERM
    token = f"sleep 300.{signum:02d}17"
    fake.add(tool("bash", {"command": f"{token} & {token} & wait"}, id="toolu_long"), text("never"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "memagent", "-C", str(project), "--no-memory", "--yes", "-p", "wait"],
        env={**cli_env, "ANTHROPIC_BASE_URL": fake.url},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_for(lambda: len(pids_running(token)) == 2, 120), "the command never started"
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum
    assert "Traceback" not in err
    assert wait_for(lambda: not pids_running(token), 5), "the command's processes survived memagent"


def test_repl_sighup_kills_the_running_command(cli_env, project, fake):
    token = "sleep 300.4242"
    fake.add(tool("bash", {"command": f"{token} & {token}"}, id="toolu_long"), text("never"))
    child = pexpect.spawn(
        sys.executable,
        ["-m", "memagent", "-C", str(project), "--no-memory", "--yes"],
        env={**cli_env, "ANTHROPIC_BASE_URL": fake.url, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1"},
        encoding="utf-8",
        dimensions=(40, 120),
        timeout=60,
    )
    child.logfile_read = io.StringIO()
    try:
        child.expect("❯")
        child.send("start it\r")
        assert wait_for(lambda: len(pids_running(token)) == 2, 120), child.logfile_read.getvalue()[-2000:]
        child.kill(signal.SIGHUP)
        child.expect(pexpect.EOF, timeout=30)
        child.close()
        assert child.signalstatus is None and child.exitstatus == 128 + signal.SIGHUP
        assert wait_for(lambda: not pids_running(token), 5), "the command's processes survived memagent"
    finally:
        if child.isalive():
            child.terminate(force=True)
