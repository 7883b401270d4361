"""SIGTERM and SIGHUP to memagent while a bash call runs: memagent exits with 128 + the signal,
and no process the command started is left running (print mode and the REPL in a pty)."""

from __future__ import annotations

import io
import json
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


# ------------------------------------------------------------------ headless runs end with a result


def _headless(cli_env, project, fake, *flags, stdin=subprocess.DEVNULL):
    return subprocess.Popen(
        [sys.executable, "-m", "memagent", "-C", str(project), "--no-memory", *flags],
        env={**cli_env, "ANTHROPIC_BASE_URL": fake.url},
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _signal_and_wait(proc, signum, ready) -> tuple[str, str]:
    try:
        assert ready(), "the run never got to the point to interrupt"
        proc.send_signal(signum)
        return proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize(
    "signum, output_format",
    [
        (signal.SIGTERM, "json"),
        (signal.SIGHUP, "json"),
        (signal.SIGHUP, "stream-json"),
        (signal.SIGINT, "json"),
    ],
)
def test_a_signal_while_waiting_for_the_model_ends_with_a_json_result(cli_env, project, fake, signum, output_format):
    from fakeapi import delay

    fake.add(delay(60, text("too late")))
    proc = _headless(cli_env, project, fake, "-p", "wait", "--output-format", output_format)
    out, err = _signal_and_wait(proc, signum, lambda: fake.wait_for_requests(1, timeout=120))
    assert proc.returncode == 128 + signum, err
    final = json.loads(out.splitlines()[-1])
    reason = "interrupted" if signum == signal.SIGINT else f"interrupted by {signal.Signals(signum).name}"
    assert final["type"] == "result" and final["is_error"] is True and final["errors"] == [reason]
    assert final["subtype"] == "error_during_execution" and final["terminal_reason"] == "aborted_streaming"
    assert final["session_id"] and final["num_turns"] == 1
    assert err.strip().splitlines()[-1] == f"memagent: {reason}" and "Traceback" not in err
    if output_format == "json":
        assert len(out.splitlines()) == 1


def test_sigterm_during_a_command_kills_it_and_says_so_in_the_result(cli_env, project, fake):
    token = "sleep 300.7143"
    fake.add(tool("bash", {"command": f"{token} & {token} & wait"}, id="toolu_long"), text("never"))
    proc = _headless(cli_env, project, fake, "--yes", "-p", "wait", "--output-format", "json")
    out, err = _signal_and_wait(proc, signal.SIGTERM, lambda: wait_for(lambda: len(pids_running(token)) == 2, 120))
    assert proc.returncode == 143, err
    final = json.loads(out)
    assert final["terminal_reason"] == "aborted_tools" and final["errors"] == ["interrupted by SIGTERM"]
    assert wait_for(lambda: not pids_running(token), 5), "the command's processes survived memagent"
    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "memagent",
            "-C",
            str(project),
            "--no-memory",
            "-c",
            "-p",
            "again",
            "--output-format",
            "json",
        ],
        env={**cli_env, "ANTHROPIC_BASE_URL": fake.url},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(resumed.stdout)["session_id"] == final["session_id"]  # the history is valid: -c works
    assert fake.errors == []


def test_text_mode_prints_what_was_produced_and_the_reason(cli_env, project, fake):
    from fakeapi import stall

    fake.add(stall(5, 60, text("The first half of the answer, and the second half.")))
    proc = _headless(cli_env, project, fake, "-p", "explain")

    def streaming() -> bool:
        if not fake.wait_for_requests(1, timeout=120):
            return False
        time.sleep(3)  # the first deltas reach memagent
        return True

    out, err = _signal_and_wait(proc, signal.SIGTERM, streaming)
    assert proc.returncode == 143, err
    assert out.strip() and "The first half of the answer, and the second half.".startswith(out.strip())
    assert err.strip().splitlines()[-1] == "memagent: interrupted by SIGTERM"


def test_stream_input_waiting_for_a_line_ends_on_sighup_after_the_turns_so_far(cli_env, project, fake):
    fake.add(text("Answer one."))
    proc = _headless(
        cli_env,
        project,
        fake,
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        stdin=subprocess.PIPE,
    )
    proc.stdin.write(json.dumps({"type": "user", "message": {"role": "user", "content": "one"}}) + "\n")
    proc.stdin.flush()

    def answered() -> bool:
        return wait_for(lambda: fake.remaining == 0, 120) and (time.sleep(2) or True)

    out, err = _signal_and_wait(proc, signal.SIGHUP, answered)
    assert proc.returncode == 129, err
    results = [obj for obj in map(json.loads, out.splitlines()) if obj["type"] == "result"]
    assert [r["result"] for r in results] == ["Answer one."]
    assert err.strip().splitlines()[-1] == "memagent: interrupted by SIGHUP"
