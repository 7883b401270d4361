"""Running a command: one small protocol, a local and a sandboxed implementation.

The ``bash`` tool, hooks and background shells all start processes the same way:

* a :class:`Command` says what to run — an ``argv`` or a shell ``script`` — in which folder,
  with which environment, for how long, with what on stdin;
* an :class:`Executor` runs it: stdout (and stderr, merged unless a separate sink is given)
  go to files, not pipes, so a background child that keeps them open cannot hang us and huge
  output costs no memory; the command is in its own session, so a timeout, a ``cancel`` event
  or any exception (Ctrl-C, ``ToolCancelled``) kills it *and everything it started*; new output
  is passed to ``progress`` while it runs;
* or an executor starts it (:meth:`Executor.start`) and returns at once (a background shell): its
  output comes through a pipe the caller drains, it is in its own session too, and
  :meth:`Started.finish` (once it has ended) releases what the sandbox prepared for it;
* :class:`LocalExecutor` runs it as it is; :class:`SandboxedExecutor` runs it inside the
  bubblewrap sandbox (:mod:`memagent.tools.sandbox`) when it can start, else locally behind
  a one-time notice, and refuses when the sandbox refuses.

The environment is the caller's: build it with :func:`memagent.childenv.filtered_environment`
(or :meth:`SandboxedExecutor.environment`) — an executor never adds anything to it.
"""

from __future__ import annotations

import codecs
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

from memagent.tools.sandbox import Sandbox

POLL_SECONDS = 0.1
# While streaming, at most this much new output is decoded per poll (the REPL shows a tail).
PROGRESS_CHUNK_BYTES = 16 * 1024
SHELL = "bash"


@dataclass(frozen=True)
class Command:
    """What to run. Exactly one of ``argv`` and ``script`` (run with ``shell -c``)."""

    cwd: Path
    env: Mapping[str, str]
    timeout: float
    argv: tuple[str, ...] = ()
    script: str | None = None
    shell: str = SHELL
    stdin: bytes = b""

    def args(self) -> list[str]:
        if self.script is not None:
            return [self.shell, "-c", self.script]
        if not self.argv:
            raise ValueError("a command needs an argv or a script")
        return list(self.argv)


@dataclass(frozen=True)
class Completed:
    """How a command ended: its exit code, or None when it timed out (its group was killed)."""

    code: int | None
    notice: str | None = None  # e.g. the sandbox could not start and the command ran unconfined

    @property
    def timed_out(self) -> bool:
        return self.code is None


@dataclass
class Started:
    """A command started and not waited for: its process (leader of its own process group, its
    output merged into ``process.stdout``, a pipe) and the notice to show (unconfined)."""

    process: subprocess.Popen[bytes]
    notice: str | None = None
    _release: Callable[[], object] = lambda: None
    _released: bool = False

    def finish(self) -> None:
        """Once the command has ended: release what was prepared for it (safe to call twice)."""
        if not self._released:
            self._released = True
            self._release()


def start_process(argv: list[str], command: Command) -> subprocess.Popen[bytes]:
    """Start ``argv`` as ``command`` says, in its own session, output to a pipe; no waiting."""
    return subprocess.Popen(
        argv, cwd=command.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True, env=dict(command.env),
    )  # fmt: skip


class Executor(Protocol):
    """Runs a :class:`Command`; its output goes to ``stdout`` (and ``stderr``, else merged).
    ``start`` starts one and returns at once (``timeout`` and ``stdin`` do not apply)."""

    def start(self, command: Command) -> Started: ...

    def run(
        self,
        command: Command,
        stdout: IO[bytes],
        *,
        stderr: IO[bytes] | None = None,
        progress: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> Completed: ...


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def start_and_wait(
    argv: list[str],
    command: Command,
    stdout: IO[bytes],
    stderr: IO[bytes] | None = None,
    progress: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
) -> int | None:
    """Run ``argv`` as ``command`` says; the exit code, or None on timeout (group killed).

    On any exception the whole process group is killed and the exception re-raised; a set
    ``cancel`` event kills it too (the code is then that of the killed command)."""
    with tempfile.TemporaryFile() as stdin:
        stdin.write(command.stdin)
        stdin.seek(0)
        proc = subprocess.Popen(
            argv, cwd=command.cwd, stdin=stdin, stdout=stdout,
            stderr=stderr if stderr is not None else subprocess.STDOUT,
            start_new_session=True, env=dict(command.env),
        )  # fmt: skip
    try:
        return _wait(proc, stdout, command.timeout, progress, cancel)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return None
    except BaseException:
        _kill_group(proc)
        raise


def _wait(
    proc: subprocess.Popen[bytes],
    sink: IO[bytes],
    timeout: float,
    progress: Callable[[str], None] | None,
    cancel: threading.Event | None,
) -> int:
    """Wait for ``proc``, passing the output written to ``sink`` so far to ``progress``."""
    if progress is None and cancel is None:
        return proc.wait(timeout=timeout)
    deadline = time.monotonic() + timeout
    offset = 0
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while True:
        try:
            code: int | None = proc.wait(timeout=min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            code = None
        if progress is not None:
            offset = _stream(sink, offset, decoder, progress, final=code is not None)
        if code is not None:
            return code
        if cancel is not None and cancel.is_set():
            _kill_group(proc)
            return proc.returncode
        if time.monotonic() >= deadline:
            raise subprocess.TimeoutExpired(proc.args, timeout)


def _stream(
    sink: IO[bytes], offset: int, decoder: codecs.IncrementalDecoder, progress: Callable[[str], None], *, final: bool
) -> int:
    size = os.fstat(sink.fileno()).st_size
    if size - offset > PROGRESS_CHUNK_BYTES:  # skip ahead: only the newest lines are shown
        offset = size - PROGRESS_CHUNK_BYTES
        decoder.reset()
    data = os.pread(sink.fileno(), size - offset, offset) if size > offset else b""
    progress(decoder.decode(data, final=final))
    return offset + len(data)


@dataclass(frozen=True)
class LocalExecutor:
    """Runs commands as they are, on the host."""

    def run(self, command: Command, stdout: IO[bytes], *, stderr: IO[bytes] | None = None,
            progress: Callable[[str], None] | None = None, cancel: threading.Event | None = None) -> Completed:  # fmt: skip
        return Completed(start_and_wait(command.args(), command, stdout, stderr, progress, cancel))

    def start(self, command: Command) -> Started:
        return Started(start_process(command.args(), command))


@dataclass(frozen=True)
class SandboxedExecutor:
    """Runs commands in the bubblewrap sandbox of their folder (see the module docstring).

    Raises :class:`memagent.tools.sandbox.SandboxRefused` when the sandbox refuses the folder."""

    sandbox: Sandbox = field(default_factory=Sandbox)

    def environment(self, base: Mapping[str, str], root: Path) -> dict[str, str]:
        """``base`` filtered for a command run in ``root`` (see :meth:`Sandbox.environment`)."""
        return self.sandbox.environment(base, root)

    def run(self, command: Command, stdout: IO[bytes], *, stderr: IO[bytes] | None = None,
            progress: Callable[[str], None] | None = None, cancel: threading.Event | None = None) -> Completed:  # fmt: skip
        with self.sandbox.wrap(command.args(), command.cwd) as (argv, notice):
            return Completed(start_and_wait(argv, command, stdout, stderr, progress, cancel), notice)

    def start(self, command: Command) -> Started:
        """The sandbox's preparation stays in place until :meth:`Started.finish`. The sandbox
        ends the command with the thread that started it: start it from a thread that lives as
        long as the command should."""
        stack = ExitStack()
        try:
            argv, notice = stack.enter_context(self.sandbox.wrap(command.args(), command.cwd))
            return Started(start_process(argv, command), notice, stack.close)
        except BaseException:
            stack.close()
            raise


__all__ = ["Command", "Completed", "Executor", "LocalExecutor", "SandboxedExecutor", "Started", "start_and_wait"]
