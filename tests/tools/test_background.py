"""Background shells through the real Executor and bubblewrap: a background command keeps the
sandbox's protection for as long as it runs, starts even from a short-lived thread, and the
executor's start() works locally too."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from memagent.tools.base import ToolContext, ToolRegistry
from memagent.tools.executor import Command, LocalExecutor
from memagent.tools.shell import bash_tool
from tools.test_sandbox import fake_home, run_bash, sandboxed  # noqa: F401  (fake_home: a fixture)
from tools.test_sandbox_sealed import git_repo


def wait_until(predicate, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_local_start_returns_at_once_and_its_output_is_a_pipe(tmp_path: Path) -> None:
    started = time.monotonic()
    handle = LocalExecutor().start(Command(tmp_path, {"PATH": "/usr/bin:/bin"}, 0, script="echo one; sleep 30"))
    assert time.monotonic() - started < 5
    assert handle.process.stdout is not None and handle.process.stdout.readline() == b"one\n"
    handle.process.kill()
    handle.process.wait()
    handle.finish()
    handle.finish()  # twice is fine


def test_a_background_command_keeps_the_sandbox_protection_while_it_runs(fake_home: Path, tmp_path: Path) -> None:
    project = git_repo(tmp_path / "proj")
    shell = sandboxed(project).with_background()
    registry = ToolRegistry.of([bash_tool(shell)])
    context = ToolContext(root=project, bash_timeout=20)
    out = registry.run(
        "bash", {"command": "sleep 1.5; touch .mcp.json && echo PLANTED; echo done", "run_in_background": True}, context
    )
    assert not out.is_error, out.content
    run_bash(shell, project, "true")  # a foreground command ends first: the protection stays
    background = shell.background.get("bash_1")
    wait_until(lambda: background.status != "running")
    text, _ = background.take()
    assert "PLANTED" not in text and "done" in text
    assert not (project / ".mcp.json").exists()  # and the stand-in went once the command ended
    shell.background.kill_all()


def test_a_command_started_from_a_thread_that_ends_keeps_running(fake_home: Path, tmp_path: Path) -> None:
    """The sandbox ends a command with the thread that started it: the registry starts every
    command from its own launcher thread, not the tool call's."""
    project = git_repo(tmp_path / "proj")
    shell = sandboxed(project).with_background()
    started: list = []
    caller = threading.Thread(target=lambda: started.append(shell.background.start("sleep 30", project)))
    caller.start()
    caller.join()
    time.sleep(1.0)
    assert started[0].status == "running"
    shell.background.kill_all()
    wait_until(lambda: started[0].status != "running", 10)
    assert started[0].status == "killed"
