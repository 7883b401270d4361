"""Background shells: commands that keep running while the conversation goes on.

``bash`` with ``run_in_background: true`` starts the command here and returns its id at once;
``bash_output`` reads what it printed since the last read (optionally only the lines a regular
expression matches), with its status and exit code; ``kill_shell`` stops it. Each command runs
through the same :class:`~memagent.tools.executor.Executor` as ``bash`` — in the sandbox when it
can start, with the same filtered environment, in its own process group (a kill ends everything
it started) — and its output goes through a pipe that a reader thread drains into a bounded
buffer: a chatty server never fills a disk, and what was not read in time is dropped (the oldest
first) with a note saying how much.

The :class:`ShellRegistry` of a session kills every command still running when the session
closes (and again at interpreter exit, in case closing never happens). Every command is started
by one launcher thread that lives as long as the registry: the sandbox ties a command's life to
the thread that started it (``--die-with-parent``), so the commands outlive the tool call that
started them, and still end with memagent even when it is killed outright.
"""

from __future__ import annotations

import atexit
import os
import queue
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from memagent.tools.executor import Command, Executor, Started

MAX_UNREAD_BYTES = 1024 * 1024  # per shell: older unread output is dropped past this
READ_CHUNK = 64 * 1024
KILL_WAIT_SECONDS = 3.0
RUNNING, COMPLETED, FAILED, KILLED = "running", "completed", "failed", "killed"


class ShellError(Exception):
    """A background-shell request that cannot be served; ``str()`` is one line."""


@dataclass
class BackgroundShell:
    """One command running (or finished) in the background."""

    id: str
    command: str
    process: subprocess.Popen[bytes]
    started: float = field(default_factory=time.monotonic)
    handle: Started | None = None  # what the executor prepared for it, released once it ended
    ended: float | None = None
    killed: bool = False
    dropped: int = 0  # unread bytes dropped because the buffer was full
    notice: str | None = None  # e.g. the sandbox could not start
    _unread: bytearray = field(default_factory=bytearray)
    _partial: bytes = b""  # an unfinished last line held back by a filtered read
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _reader: threading.Thread | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def exit_code(self) -> int | None:
        return self.process.poll()

    @property
    def status(self) -> str:
        """``running`` until the command ended and all its output was collected."""
        code = self.process.poll()
        if code is None or (self._reader is not None and self._reader.is_alive()):
            return RUNNING
        if self.killed:
            return KILLED
        return COMPLETED if code == 0 else FAILED

    def runtime(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def _drain(self) -> None:
        """Reader thread: move the pipe's output into the bounded buffer until the end."""
        pipe = self.process.stdout
        assert pipe is not None
        while True:
            try:
                chunk = os.read(pipe.fileno(), READ_CHUNK)
            except OSError:
                break
            if not chunk:
                break
            with self._lock:
                self._unread += chunk
                excess = len(self._unread) - MAX_UNREAD_BYTES
                if excess > 0:
                    del self._unread[:excess]
                    self.dropped += excess
        self.process.wait()
        self.ended = self.ended or time.monotonic()
        pipe.close()
        if self.handle is not None:
            self.handle.finish()

    def take(self, pattern: re.Pattern[str] | None = None) -> tuple[str, int]:
        """The output since the last read (only the matching lines, with ``pattern``; the others
        are consumed too) and how many bytes were dropped before it."""
        with self._lock:
            data, dropped = self._partial + bytes(self._unread), self.dropped
            self._unread.clear()
            self.dropped = 0
            self._partial = b""
            if pattern is not None and self.process.poll() is None and not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1  # keep an unfinished line for the next read
                data, self._partial = data[:cut], data[cut:]
        text = data.decode("utf-8", errors="replace")
        if pattern is not None:
            text = "".join(line for line in text.splitlines(keepends=True) if pattern.search(line))
        return text, dropped

    def kill(self) -> None:
        """End the command and everything it started (its process group, which may outlive the
        command itself: a child it left running still holds the output open)."""
        if self.status == RUNNING:
            self.killed = self.process.poll() is None or self.killed
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
        try:
            self.process.wait(KILL_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            pass
        self.ended = self.ended or time.monotonic()
        if self._reader is not None:
            self._reader.join(KILL_WAIT_SECONDS)


class ShellRegistry:
    """The background shells of one session (see the module docstring).

    ``executor`` starts the commands; ``command(script, root)`` makes the :class:`Command` the
    ``bash`` tool would run (its environment)."""

    def __init__(self, executor: Executor, command: Callable[[str, Path], Command], *, limit: int = 16) -> None:
        self.executor = executor
        self.command = command
        self.limit = limit
        self._shells: dict[str, BackgroundShell] = {}
        self._counter = 0
        self._lock = threading.Lock()
        self._closed = False
        self._exit_hook = False
        self._requests: queue.SimpleQueue[tuple[Command, queue.SimpleQueue[Started | Exception]] | None] = (
            queue.SimpleQueue()
        )
        self._launcher: threading.Thread | None = None

    def _launch_loop(self) -> None:
        """The launcher thread: starts every command, then waits until the registry closes."""
        while True:
            request = self._requests.get()
            if request is None:
                return
            command, answer = request
            try:
                answer.put(self.executor.start(command))
            except Exception as exc:  # the sandbox refused, the program is missing: the caller's error
                answer.put(exc)

    def _start(self, command: Command) -> Started:
        if self._launcher is None:
            self._launcher = threading.Thread(target=self._launch_loop, name="memagent-shell-launcher", daemon=True)
            self._launcher.start()
        answer: queue.SimpleQueue[Started | Exception] = queue.SimpleQueue()
        self._requests.put((command, answer))
        started = answer.get()
        if isinstance(started, Exception):
            raise started
        return started

    def start(self, script: str, root: Path) -> BackgroundShell:
        """Start ``script`` in ``root``; raises ShellError (closing, too many), or what the
        executor raises (the sandbox refused, OSError)."""
        with self._lock:
            if self._closed:
                raise ShellError("the session is closing; no new background command can start")
            running = sum(1 for s in self._shells.values() if s.status == RUNNING)
            if running >= self.limit:
                raise ShellError(
                    f"{running} background commands are running already (the limit); stop one with kill_shell first"
                )
            handle = self._start(self.command(script, root))
            self._counter += 1
            shell_id = f"bash_{self._counter}"
            shell = BackgroundShell(shell_id, script, handle.process, notice=handle.notice, handle=handle)
            shell._reader = threading.Thread(target=shell._drain, name=f"memagent-{shell_id}", daemon=True)
            shell._reader.start()
            self._shells[shell_id] = shell
            if not self._exit_hook:
                self._exit_hook = True
                atexit.register(self.kill_all)
        return shell

    def get(self, shell_id: str) -> BackgroundShell:
        found = self._shells.get(shell_id.strip())
        if found is None:
            known = ", ".join(self._shells) or "none"
            raise ShellError(f"no background shell {shell_id!r} (this session has: {known})")
        return found

    def shells(self) -> list[BackgroundShell]:
        return list(self._shells.values())

    def kill_all(self) -> list[str]:
        """Kill every command still running; the ids killed."""
        with self._lock:
            self._closed = True
            running = [s for s in self._shells.values() if s.status == RUNNING]
        for shell in running:
            shell.kill()
        if self._launcher is not None:
            self._requests.put(None)
        if self._exit_hook:
            atexit.unregister(self.kill_all)
            self._exit_hook = False
        return [s.id for s in running]


__all__ = ["BackgroundShell", "COMPLETED", "FAILED", "KILLED", "RUNNING", "ShellError", "ShellRegistry"]
