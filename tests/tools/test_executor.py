"""The Executor protocol with real processes: stdin, separate or merged output, streaming, timeout
and cancel kill the whole process group, and the sandboxed executor confines the same command."""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path

import pytest

from memagent.tools.executor import Command, LocalExecutor, SandboxedExecutor
from memagent.tools.sandbox import Sandbox, SandboxConfig, SandboxRefused

ENV = {"PATH": "/usr/bin:/bin"}


def run(executor, command: Command, **kwargs) -> tuple[object, str, str]:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        done = executor.run(command, out, stderr=err, **kwargs)
        out.seek(0)
        err.seek(0)
        return done, out.read().decode(), err.read().decode()


def alive(pid_file: Path) -> bool:
    pid = int(pid_file.read_text())
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def test_stdin_and_separate_outputs(tmp_path: Path) -> None:
    command = Command(tmp_path, ENV, 10, script="cat; echo oops >&2; exit 3", stdin=b"payload")
    done, out, err = run(LocalExecutor(), command)
    assert (done.code, out, err) == (3, "payload", "oops\n")


def test_argv_and_merged_output(tmp_path: Path) -> None:
    with tempfile.TemporaryFile() as sink:
        done = LocalExecutor().run(Command(tmp_path, ENV, 10, argv=("sh", "-c", "echo a; echo b >&2")), sink)
        sink.seek(0)
        assert done.code == 0 and sorted(sink.read().decode().split()) == ["a", "b"]
    with pytest.raises(ValueError):
        Command(tmp_path, ENV, 10).args()


def test_a_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    script = "sleep 60 & echo $! > child.pid; sleep 60"
    done, _, _ = run(LocalExecutor(), Command(tmp_path, ENV, 0.5, script=script))
    assert done.timed_out
    time.sleep(0.2)
    assert not alive(tmp_path / "child.pid")


def test_cancel_kills_the_group_and_progress_streams(tmp_path: Path) -> None:
    cancel = threading.Event()
    seen: list[str] = []

    def progress(chunk: str) -> None:
        seen.append(chunk)
        if "started" in "".join(seen):
            cancel.set()

    script = "sleep 60 & echo $! > child.pid; echo started; sleep 60"
    started = time.monotonic()
    with tempfile.TemporaryFile() as sink:
        done = LocalExecutor().run(Command(tmp_path, ENV, 30, script=script), sink, progress=progress, cancel=cancel)
    assert time.monotonic() - started < 10 and not done.timed_out
    time.sleep(0.2)
    assert "started" in "".join(seen) and not alive(tmp_path / "child.pid")


def test_an_exception_kills_the_group(tmp_path: Path) -> None:
    def progress(chunk: str) -> None:
        if "started" in chunk:
            raise KeyboardInterrupt

    with tempfile.TemporaryFile() as sink, pytest.raises(KeyboardInterrupt):
        LocalExecutor().run(
            Command(tmp_path, ENV, 30, script="sleep 60 & echo $! > child.pid; echo started; sleep 60"),
            sink,
            progress=progress,
        )
    time.sleep(0.2)
    assert not alive(tmp_path / "child.pid")


def test_the_sandboxed_executor_confines_and_refuses(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    executor = SandboxedExecutor(Sandbox(SandboxConfig()))
    env = executor.environment({**ENV, "GITHUB_TOKEN": "x"}, project)
    assert "GITHUB_TOKEN" not in env and env["TMPDIR"] == "/tmp"
    done, _, _ = run(executor, Command(project, env, 20, script=f"touch {tmp_path}/outside; echo in > inside"))
    assert done.code == 0  # /tmp is private inside: the write lands there, not on the host
    assert not (tmp_path / "outside").exists() and (project / "inside").read_text() == "in\n"
    (project / ".claude").symlink_to(tmp_path)
    with pytest.raises(SandboxRefused, match=r"\.claude is a symlink"):
        run(executor, Command(project, env, 20, script="true"))
