"""A 2 MB paste in the REPL (a real pty) against a fake API that answers "prompt is too long" above
a size: the model gets a preview and a file, the status line counts what was sent, and the next
turn works."""

from __future__ import annotations

import re

import pexpect
import pytest

from fakeapi import FakeAnthropic, text
from fakeapi.server import _request_pieces, estimate_tokens
from repl_kit import PROMPT, expect_text

LIMIT = 40_000
PTY_DIMENSIONS = (40, 160)


@pytest.fixture
def fake():
    with FakeAnthropic(max_input_tokens=LIMIT) as server:
        yield server


def sent_tokens(body: dict) -> int:
    """What the fake counts (and reports as usage) for a request."""
    return estimate_tokens(sum(len(piece) for piece, _ in _request_pieces(body)))


def shown_tokens(value: str) -> float:
    return float(value[:-1]) * 1000 if value.endswith("k") else float(value)


def test_a_2mb_paste_is_set_aside_the_status_counts_what_was_sent_and_the_next_turn_works(
    spawn, fake, project, isolated_env
):
    fake.add(text("I read its start and its end."), text("Second answer."))
    paste = "".join(f"trace {n:06d}: worker 3 finished job {n * 11} in {n % 89} ms\n" for n in range(40_000))
    assert len(paste) > 2_000_000
    child = spawn()
    child.expect(PROMPT)
    child.send("\x1b[200~" + paste + "\x1b[201~")
    child.send("\r")
    child.expect(r"\[pasted [\d,]+ lines\]", timeout=180)
    child.expect("too large to send whole", timeout=60)
    expect_text(child, "I read its start and its end.")
    status = expect_text(child, PROMPT)
    [shown] = re.findall(r"context ([\d.]+k?)/", status)[-1:]
    assert abs(shown_tokens(shown) - sent_tokens(fake.requests[0])) < 1_500  # not the 2 MB that was pasted
    child.send("and now?\r")
    expect_text(child, "Second answer.")
    child.expect(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF, timeout=60)
    child.close()
    assert child.exitstatus == 0
    assert fake.too_long == [] and fake.errors == [] and len(fake.requests) == 2
    assert all(sent_tokens(body) < LIMIT for body in fake.requests)
    first = fake.requests[0]["messages"][-1]["content"][0]["text"]
    assert first.startswith("trace 000000") and first.rstrip().endswith(
        f"trace 039999: worker 3 finished job 439989 in {39999 % 89} ms"
    )
    saved = next(project.glob(".transcripts/*/attachments/message-*.txt"))
    assert saved.read_text() == paste.strip()
    history = (isolated_env / "history").read_text()
    assert "and now?" in history and "trace 017000" not in history  # a 2 MB entry is not saved to the history file


def test_a_one_line_paste_of_a_megabyte_is_set_aside_and_the_next_turn_works(spawn, fake, project):
    """Minified JSON: one line, no newline to cut at; the paste still goes as a preview and a file."""
    fake.add(text("It is one JSON array."), text("Second answer."))
    paste = "[" + ",".join(f'{{"id":{n},"name":"item-{n}","ok":true}}' for n in range(30_000)) + "]"
    assert len(paste) > 1_000_000 and "\n" not in paste
    child = spawn()
    child.expect(PROMPT)
    child.send("\x1b[200~" + paste + "\x1b[201~")
    child.send("\r")
    child.expect("too large to send whole", timeout=180)
    expect_text(child, "It is one JSON array.")
    child.expect(PROMPT)
    child.send("and now?\r")
    expect_text(child, "Second answer.")
    child.expect(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF, timeout=60)
    child.close()
    assert child.exitstatus == 0
    assert fake.too_long == [] and fake.errors == [] and len(fake.requests) == 2
    first = fake.requests[0]["messages"][-1]["content"][0]["text"]
    assert first.startswith('[{"id":0,') and first.rstrip().endswith('"name":"item-29999","ok":true}]')
    assert "Some lines are long" in first  # the model is told how to read a line longer than read_file shows
    saved = next(project.glob(".transcripts/*/attachments/message-*.txt"))
    assert saved.read_text() == paste
