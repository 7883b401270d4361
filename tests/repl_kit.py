"""The REPL in a real pseudo-terminal, shared by every pty test: ``spawn`` starts the real CLI
against the loopback fake API (``fake``), and ``expect_text`` matches what the screen shows.

A test module may set ``PTY_DIMENSIONS = (rows, columns)`` for its terminal size.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Callable, Iterator

import pexpect
import pytest

from fakeapi import FakeAnthropic

PROMPT = "❯"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")
DEFAULT_DIMENSIONS = (40, 160)


def expect_text(child: pexpect.spawn, text: str) -> str:
    """Wait for ``text`` as shown on screen (styles may put escape codes between its characters);
    returns, without escape codes, what was printed before it."""
    styled = r"(?:\x1b\[[0-9;?]*[A-Za-z])*"
    child.expect(styled.join(re.escape(char) for char in text))
    return ANSI.sub("", child.before)


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def spawn(request, cli_env, project, fake) -> Iterator[Callable[..., pexpect.spawn]]:
    """``spawn(*flags, memory=False)``: memagent in a pty in ``project``; the screen of every child
    is printed at teardown (pytest shows it when the test failed)."""
    children: list[pexpect.spawn] = []
    dimensions = getattr(request.module, "PTY_DIMENSIONS", DEFAULT_DIMENSIONS)

    def start(*flags: str, memory: bool = False) -> pexpect.spawn:
        env = {**cli_env, "ANTHROPIC_BASE_URL": fake.url, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1"}
        args = ["-m", "memagent", "-C", str(project), *([] if memory else ["--no-memory"]), *flags]
        child = pexpect.spawn(sys.executable, args, env=env, encoding="utf-8", dimensions=dimensions, timeout=90)
        child.logfile_read = io.StringIO()
        children.append(child)
        return child

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)
        print(ANSI.sub("", child.logfile_read.getvalue())[-4000:])
