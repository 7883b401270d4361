"""A warm starter for the real ``memagent`` CLI: the same process boundary, without paying the
imports again for every run.

Most of a ``python -m memagent -p …`` run in the tests is Python importing the Anthropic SDK,
Chroma and ONNX runtime (2–3 s of CPU each time). The starter is one server process per pytest
worker that imports them once and then, for each run, forks a child that *is* the run: its own
pid, its own stdin/stdout/stderr pipes, the environment, working directory and umask of the test,
``sys.argv`` of ``python -m memagent …``, and ``memagent.__main__`` executed as ``__main__``.
The child exits through the ordinary interpreter shutdown (atexit, flushed streams, exit code or
signal), and its status comes back to the test as a ``CompletedProcess`` — what
``subprocess.run`` would return.

What a fork cannot reproduce is decided at interpreter start: the locale, the ``PYTHON*``
variables (unbuffered streams, hash seed, UTF-8 mode …). A run whose start-up variables differ
from the starter's goes through a cold ``subprocess.run`` instead, and so does a run while another
one is in flight, and every run when the starter's own imports printed anything (a warning a cold
start would show). Tests about the process boundary itself — which modules a command imports,
the REPL in a pty, signals — start real processes of their own and never come here.

Run as a script, this file is the server: ``python warm_cli.py SOCKET``.
"""

from __future__ import annotations

import importlib
import json
import locale
import os
import runpy
import select
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path

# Imported by the server before it forks: what the runs would import anyway, except what starts
# native threads when imported (numpy's BLAS, ONNX runtime, Chroma): a forked child would hang or
# abort joining threads it does not have, so the server refuses to serve when it has more than one.
PRELOADED = (
    "memagent.cli.main",
    "memagent.runtime",
    "anthropic",
    "memagent.memory.service",
    "memagent.cli.chat",
    "memagent.mcp_bridge.manager",
    "mcp",
    "tiktoken",
    "memagent.redact",
)
_MESSAGE_BYTES = 1 << 20
_SERVER_START_SECONDS = 120.0


def startup_variables(env: Mapping[str, str]) -> dict[str, str]:
    """The variables the interpreter reads once when it starts (a forked child inherits their effect)."""
    return {k: v for k, v in env.items() if k.startswith(("PYTHON", "LC_")) or k in ("LANG", "LANGUAGE")}


# ---- the server ------------------------------------------------------------------------------


def _next_request(listener: socket.socket) -> tuple[dict, list[int]] | None:
    """Serve runs until one is for this process to become (the child returns it), or until the
    test side closes our stdin (``None``)."""
    while True:
        ready, _, _ = select.select([listener, 0], [], [])
        if 0 in ready and not os.read(0, 1):
            return None
        if listener not in ready:
            continue
        conn, _ = listener.accept()
        with conn:
            message, fds, _, _ = socket.recv_fds(conn, _MESSAGE_BYTES, 3)
            if not message or len(fds) != 3:  # the test side gave up before sending its run
                for fd in fds:
                    os.close(fd)
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                listener.close()
                return json.loads(message), fds
            for fd in fds:
                os.close(fd)
            pidfd = os.pidfd_open(pid)
            try:
                socket.send_fds(conn, [json.dumps({"pid": pid}).encode()], [pidfd])
            except OSError:
                os.kill(pid, signal.SIGKILL)  # nobody is there to read the run
            os.close(pidfd)
            _, status = os.waitpid(pid, 0)
            try:
                conn.send(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode())
            except OSError:
                pass  # the test side gave up on this run (a timeout)


def _become(request: dict, fds: list[int]) -> None:
    """Turn this forked child into ``python -m memagent ARGS`` started by the test."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = request["cwd"]
    sys.argv = ["memagent", *request["args"]]
    runpy.run_module("memagent", run_name="__main__", alter_sys=True)


def _address(name: str) -> str:
    """An abstract Unix socket address: no file to clean up, no path length limit to hit."""
    return "\0" + name


def serve(socket_name: str) -> None:
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # the run imports it itself, or fails the same way
    if len(os.listdir("/proc/self/task")) != 1:
        sys.stdout.write("threaded\n")
        return
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(_address(socket_name))
    listener.listen(8)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    handed = _next_request(listener)
    if handed is None:
        os._exit(0)  # the test run is over: no clean-up to wait for
    _become(*handed)


# ---- the test side ---------------------------------------------------------------------------


class WarmStarter:
    """One server process; ``run`` returns ``None`` when this run must start cold."""

    def __init__(self, env: Mapping[str, str], workdir: Path):
        self.startup = startup_variables(env)
        self.socket_name = f"memagent-warm-starter-{os.getpid()}-{id(self)}"
        self._busy = threading.Lock()
        errors = workdir / "starter.stderr"
        with errors.open("wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, __file__, self.socket_name],
                env=dict(env),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=os.getcwd(),
            )
        self.usable = self._wait_ready(errors)

    def _wait_ready(self, errors: Path) -> bool:
        assert self.process.stdout is not None
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        ready = selector.select(_SERVER_START_SECONDS)
        selector.close()
        line = self.process.stdout.readline() if ready else b""
        return line == b"ready\n" and not errors.read_bytes()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()

    def run(self, args: list[str], env: Mapping[str, str], input: str | bytes, timeout: float, cwd: str):
        if not self.usable or self.process.poll() is not None or startup_variables(env) != self.startup:
            return None
        if not self._busy.acquire(blocking=False):
            return None
        try:
            return self._run(args, env, input, timeout, cwd)
        finally:
            self._busy.release()

    def _run(self, args: list[str], env: Mapping[str, str], input: str | bytes, timeout: float, cwd: str):
        command = [sys.executable, "-m", "memagent", *args]
        encoding = locale.getpreferredencoding(False)
        umask = os.umask(0o022)
        os.umask(umask)
        request = {"args": list(args), "env": dict(env), "cwd": cwd, "umask": umask}
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn:
            try:
                conn.connect(_address(self.socket_name))
                socket.send_fds(conn, [json.dumps(request).encode()], [stdin_r, stdout_w, stderr_w])
            except OSError:  # a request too large for one message, a starter gone: start it cold
                for fd in (stdin_r, stdin_w, stdout_r, stdout_w, stderr_r, stderr_w):
                    os.close(fd)
                return None
            for fd in (stdin_r, stdout_w, stderr_w):
                os.close(fd)
            message, fds, _, _ = socket.recv_fds(conn, _MESSAGE_BYTES, 1)
            pidfd = fds[0]
            try:
                deadline = time.monotonic() + timeout
                out, err, finished = _exchange(stdin_w, stdout_r, stderr_r, _bytes(input, encoding), deadline)
                if finished:
                    conn.settimeout(max(deadline - time.monotonic(), 0.001))
                    try:
                        status = conn.recv(_MESSAGE_BYTES)
                    except TimeoutError:
                        finished = False
                if not finished:
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                    raise subprocess.TimeoutExpired(
                        command, timeout, _like(input, out, encoding), _like(input, err, encoding)
                    )
            finally:
                os.close(pidfd)
        returncode = json.loads(status)["returncode"]
        return subprocess.CompletedProcess(
            command, returncode, _like(input, out, encoding), _like(input, err, encoding)
        )


def _bytes(input: str | bytes, encoding: str) -> bytes:
    return input if isinstance(input, bytes) else input.encode(encoding)


def _like(input: str | bytes, data: bytes, encoding: str) -> str | bytes:
    """Output as ``subprocess.run`` returns it: bytes for bytes input, else as with ``text=True``
    (decoded, universal newlines)."""
    if isinstance(input, bytes):
        return data
    return data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


def _exchange(stdin_w: int, stdout_r: int, stderr_r: int, data: bytes, deadline: float):
    """Write ``data`` to the child's stdin and read its stdout and stderr to their end (or to the
    deadline): ``(stdout, stderr, finished)``."""
    chunks: dict[int, list[bytes]] = {stdout_r: [], stderr_r: []}
    selector = selectors.DefaultSelector()
    os.set_blocking(stdin_w, False)
    if data:
        selector.register(stdin_w, selectors.EVENT_WRITE)
    else:
        os.close(stdin_w)
    for fd in chunks:
        selector.register(fd, selectors.EVENT_READ)
    offset = 0
    try:
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            for key, _ in selector.select(remaining):
                if key.fd == stdin_w:
                    try:
                        offset += os.write(stdin_w, data[offset : offset + 65536])
                    except BrokenPipeError:
                        offset = len(data)
                    if offset >= len(data):
                        selector.unregister(stdin_w)
                        os.close(stdin_w)
                    continue
                chunk = os.read(key.fd, 65536)
                if chunk:
                    chunks[key.fd].append(chunk)
                else:
                    selector.unregister(key.fd)
        finished = not selector.get_map()
    finally:
        for key in list(selector.get_map().values()):
            selector.unregister(key.fd)
            if key.fd == stdin_w:
                os.close(stdin_w)
        selector.close()
        os.close(stdout_r)
        os.close(stderr_r)
    return b"".join(chunks[stdout_r]), b"".join(chunks[stderr_r]), finished


def starter_environment(env: Mapping[str, str], home: Path) -> dict[str, str]:
    """The server's own environment: the test's start-up variables, homes of its own, no key."""
    own = {k: v for k, v in env.items() if not k.startswith("ANTHROPIC_")}
    for name in ("HOME", "MEMAGENT_HOME"):
        own[name] = str(home / name.lower())
    for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        own[name] = str(home / name.lower())
    return own


class WarmStarters:
    """A starter per set of start-up variables, made when first needed, closed at the end."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self._starters: dict[tuple, WarmStarter] = {}
        self._lock = threading.Lock()

    def run(
        self,
        args: list[str],
        env: Mapping[str, str],
        input: str | bytes,
        timeout: float,
        cwd: str | os.PathLike | None = None,
    ):
        """``subprocess.run([python, -m, memagent, *args], env=env, input=input, timeout=timeout,
        cwd=cwd, capture_output=True, text=isinstance(input, str))`` from a warm start, or
        ``None``: start it cold."""
        if any(not isinstance(arg, str) for arg in args):
            return None  # arguments as bytes: decoded by the interpreter at start-up, so start it cold
        key = tuple(sorted(startup_variables(env).items()))
        with self._lock:
            starter = self._starters.get(key)
            if starter is None:
                folder = Path(tempfile.mkdtemp(prefix="starter-", dir=self.workdir))
                starter = WarmStarter(starter_environment(env, folder), folder)
                self._starters[key] = starter
        return starter.run(args, env, input, timeout, os.path.abspath(cwd if cwd is not None else os.getcwd()))

    def close(self) -> None:
        for starter in self._starters.values():
            starter.close()


if __name__ == "__main__":
    serve(sys.argv[1])
