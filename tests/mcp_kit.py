"""Helpers for the MCP tests: real servers written with the official SDK (``mcp_bridge/toy_server.py``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memagent.mcp_bridge.config import HttpServer, StdioServer

TOY = Path(__file__).parent / "mcp_bridge" / "toy_server.py"
# Starting a server imports the SDK (about a second, more on a loaded machine).
START_TIMEOUT = 60.0


def toy_stdio(name: str = "toy", *flags: str, env: dict[str, str] | None = None) -> StdioServer:
    return StdioServer(name, sys.executable, (str(TOY), "stdio", *flags), env or {})


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the HTTP toy server exited with {process.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError("the HTTP toy server did not open its port")


def run_http_toy(transport: str = "http") -> Iterator[str]:
    """Start a streamable-HTTP (or ``"sse"``) toy server on a free port; yields its URL, stops it after."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(TOY), transport, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TOY_TOKEN": "from-http"},
    )
    try:
        _wait_for_port(port, process, START_TIMEOUT)
        yield f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def http_server(name: str, url: str, headers: dict[str, str] | None = None, *, sse: bool = False) -> HttpServer:
    return HttpServer(name, url, headers or {}, sse=sse)


COMPAT = Path(__file__).parent / "mcp_bridge" / "compat_server.py"


def compat_stdio(name: str = "compat", *flags: str) -> StdioServer:
    """The server with awkward shapes (``mcp_bridge/compat_server.py``)."""
    return StdioServer(name, sys.executable, (str(COMPAT), *flags))


@contextmanager
def lending_mcp_serve(project: Path, env: dict[str, str]) -> Iterator[str]:
    """``memagent mcp serve`` in ``project`` for the block (its client says nothing), once it lends
    its embedder (``embedding.shared``); yields the lending address."""
    from memagent.embedding.shared import hello, lending_address

    server = subprocess.Popen(
        [sys.executable, "-m", "memagent", "mcp", "serve", "-C", str(project)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    address = lending_address(Path(env["MEMAGENT_HOME"]))
    try:
        deadline = time.monotonic() + 120
        while hello(address) is None:
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"mcp serve never lent its embedder (exit code {server.poll()})")
            time.sleep(0.1)
        yield address
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
