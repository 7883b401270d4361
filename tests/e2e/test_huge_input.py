"""Nothing huge can wedge a session: the real CLI against a fake API that answers "prompt is too
long" above a size, as the real one does above the model's window.

Each case ends with a normal turn that succeeds: a 2 MB prompt on stdin, a 2 MB tool output, a
message the API still finds too long, and resuming a transcript that an older version left
wedged (a 2 MB message that every request failed on). The REPL paste: tests/cli/test_huge_paste_pty.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from fakeapi import FakeAnthropic, text, tool
from warm_cli import WarmStarters

LIMIT = 40_000  # the fake's window, in its tokens (characters / 4)


def env_for(fake: FakeAnthropic, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "MEMAGENT_"))}
    env.update(ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY="sk-ant-fake", MEMAGENT_HOME=str(home), NO_COLOR="1")
    return env


def memagent(
    root: Path, env: dict[str, str], *args: str, stdin: str = "", starters: WarmStarters | None = None
) -> subprocess.CompletedProcess:
    """The real CLI in a process of its own; forked by ``starters`` when they can (``warm_cli.py``)."""
    flags = ["-C", str(root), "--no-memory", *args]
    warm = starters.run(flags, env, stdin, 180) if starters is not None else None
    if warm is not None:
        return warm
    return subprocess.run(
        [sys.executable, "-m", "memagent", *flags], env=env, input=stdin, capture_output=True, text=True, timeout=180
    )


def big_log(megabytes: float = 2.0, tag: str = "event") -> str:
    line = f"{tag} 000000: the service answered with status 200 after 35 ms\n"
    count = int(megabytes * 1024 * 1024 / len(line))
    return "".join(f"{tag} {n:06d}: the service answered with status 200 after {n % 97} ms\n" for n in range(count))


def request_tokens(body: dict) -> int:
    return len(json.dumps(body)) // 4


def records(root: Path) -> list[list[dict]]:
    return [
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for path in sorted((root / ".transcripts").glob("*.jsonl"))
    ]


def test_a_2mb_prompt_on_stdin_is_sent_as_a_preview_and_the_next_turn_works(tmp_path, project, warm_starters):
    paste = "What went wrong in this log?\n" + big_log()
    with FakeAnthropic(
        [text("The log shows only status 200."), text("Nothing else to add.")], max_input_tokens=LIMIT
    ) as fake:
        env = env_for(fake, tmp_path / "home")
        first = memagent(project, env, "-p", "-", stdin=paste, starters=warm_starters)
        second = memagent(project, env, "-c", "-p", "anything else?", starters=warm_starters)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "The log shows only status 200.\n"
    assert "too large to send whole" in first.stderr and "Traceback" not in first.stderr
    assert second.returncode == 0, second.stderr
    assert second.stdout == "Nothing else to add.\n" and "repaired" not in second.stderr
    assert fake.too_long == [] and fake.errors == []
    assert all(request_tokens(body) < LIMIT for body in fake.requests)
    sent = fake.requests[0]["messages"][-1]["content"][0]["text"]
    last_line = paste.strip().splitlines()[-1]
    assert sent.startswith("What went wrong in this log?\nevent 000000") and sent.endswith(last_line)
    [first_session, _] = records(project)
    [user] = [r for r in first_session if r["type"] == "message" and r["role"] == "user"]
    assert user["content"][0]["text"] == paste.strip() and user["sent_as_preview"] is True  # kept whole
    saved = sorted((project / ".transcripts").glob("*/attachments/message-*.txt"))
    assert saved[0].read_text() == paste.strip() and saved[0].relative_to(project).as_posix() in sent
    assert len(saved) == 2 and os.path.samefile(saved[0], saved[1])  # the resumed session links, not copies


def test_a_2mb_tool_output_is_set_aside_and_the_next_turn_works(tmp_path, project, warm_starters):
    home = tmp_path / "home"  # the user's own config: an untrusted project may not raise a cap
    home.mkdir()
    (home / "config.toml").write_text("output_cap_chars = 5000000\n")  # no bash cap: the shelf decides
    script = "import sys\nfor n in range(40000): print(f'row {n:05d} of the generated report, value {n * 3}')\n"
    (project / "report.py").write_text(script)
    with FakeAnthropic(
        [
            tool("bash", {"command": "python3 report.py"}),
            text("The report has 40,000 rows."),
            text("Yes, row 39999 is the last."),
        ],
        max_input_tokens=LIMIT,
    ) as fake:
        env = env_for(fake, tmp_path / "home")
        first = memagent(project, env, "--yes", "-p", "run the report", starters=warm_starters)
        second = memagent(project, env, "--yes", "-c", "-p", "is row 39999 the last?", starters=warm_starters)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "The report has 40,000 rows.\n"
    assert second.returncode == 0 and second.stdout == "Yes, row 39999 is the last.\n", second.stderr
    assert fake.too_long == [] and fake.errors == []
    assert all(request_tokens(body) < LIMIT for body in fake.requests)
    result = fake.requests[1]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and "row 00000" in result["content"] and "row 39999" in result["content"]
    saved = sorted((project / ".transcripts").glob("*/attachments/tool-output-*.txt"))[0]
    assert saved.read_text().count("\n") >= 40_000 and saved.relative_to(project).as_posix() in result["content"]


def test_a_message_the_api_still_finds_too_long_is_shrunk_and_the_turn_retried(tmp_path, project, warm_starters):
    spec = "Review this spec:\n" + big_log(0.1, "clause")  # ~26k tokens by the fake: over its 20k
    with FakeAnthropic([text("Reviewed."), text("And done.")], max_input_tokens=20_000) as fake:
        env = env_for(fake, tmp_path / "home")
        (tmp_path / "home").mkdir()  # the user's own config: an untrusted project may not raise the limit
        (tmp_path / "home" / "config.toml").write_text("inline_max_tokens = 100000\n")  # sent whole at first
        first = memagent(project, env, "-p", spec, starters=warm_starters)
        second = memagent(project, env, "-c", "-p", "thanks", starters=warm_starters)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "Reviewed.\n" and "making the context smaller" in first.stderr
    assert len(fake.too_long) == 1 and request_tokens(fake.requests[0]) > 20_000
    assert second.returncode == 0 and second.stdout == "And done.\n", second.stderr
    answered = [body for body in fake.requests if request_tokens(body) <= 20_000]
    assert len(answered) == 2 and fake.errors == []


def test_continuing_a_wedged_transcript_repairs_it_on_load(tmp_path, project, warm_starters):
    transcripts = project / ".transcripts"
    transcripts.mkdir(mode=0o700)
    paste = "Summarise:\n" + big_log()
    wedged = [
        {
            "type": "session_start",
            "time": "2026-11-20T10:00:00.000+00:00",
            "session_id": "20261120-100000-dead",
            "model": "claude-sonnet-5-5",
            "cwd": str(project),
            "version": "0.0.9",
            "kind": "interactive",
        },
        {
            "type": "message",
            "time": "2026-11-20T10:00:01.000+00:00",
            "id": "1",
            "role": "user",
            "content": [{"type": "text", "text": paste}],
        },
        {
            "type": "message",
            "time": "2026-11-20T10:01:01.000+00:00",
            "id": "2",
            "role": "user",
            "content": [
                {"type": "text", "text": "[The previous request got no answer: it was interrupted or failed.]"},
                {"type": "text", "text": "hello?"},
            ],
        },
    ]
    (transcripts / "20261120-100000-dead.jsonl").write_text("".join(json.dumps(r) + "\n" for r in wedged))
    with FakeAnthropic([text("Summary: all status 200."), text("Still here.")], max_input_tokens=LIMIT) as fake:
        env = env_for(fake, tmp_path / "home")
        first = memagent(project, env, "-c", "-p", "are you there?", starters=warm_starters)
        second = memagent(project, env, "-c", "-p", "and now?", starters=warm_starters)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "Summary: all status 200.\n"
    assert "repaired on resume" in first.stderr and "too large to send whole" in first.stderr
    assert second.returncode == 0 and second.stdout == "Still here.\n", second.stderr
    assert fake.too_long == [] and fake.errors == []
    sent = json.dumps(fake.requests[0]["messages"])
    assert "Summarise:" in sent and "attachments/message-" in sent and "hello?" in sent
    assert any(p.read_text() == paste for p in transcripts.glob("*/attachments/message-*.txt"))


def test_the_model_pages_through_a_saved_paste_with_read_file(tmp_path, project, warm_starters):
    """The preview names a file the model can read: after -c, read_file with an offset returns
    the exact lines from the middle of the 2 MB paste the first run set aside."""
    paste = "Keep this log for later:\n" + big_log()
    with FakeAnthropic([text("Kept.")], max_input_tokens=LIMIT) as fake:
        env = env_for(fake, tmp_path / "home")
        first = memagent(project, env, "-p", "-", stdin=paste, starters=warm_starters)
        named = re.findall(r"\.transcripts/[^\s\"]+?\.txt", fake.requests[0]["messages"][-1]["content"][0]["text"])
    assert first.returncode == 0, first.stderr
    assert named and (project / named[0]).read_text() == paste.strip()
    steps = [tool("read_file", {"path": named[0], "offset": 20_002, "limit": 3}), text("Row 20000 is status 200.")]
    with FakeAnthropic(steps, max_input_tokens=LIMIT) as fake:
        second = memagent(
            project, env_for(fake, tmp_path / "home"), "-c", "-p", "what does row 20000 say?", starters=warm_starters
        )
    assert second.returncode == 0, second.stderr
    assert second.stdout == "Row 20000 is status 200.\n"
    assert fake.too_long == [] and fake.errors == []
    resent = re.findall(r"\.transcripts/[^\s\"]+?\.txt", json.dumps(fake.requests[0]["messages"]))
    assert resent and all(Path(p).name == Path(named[0]).name for p in resent)  # the same file, linked
    result = fake.requests[1]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and not result.get("is_error"), result
    shown = json.dumps(result["content"])
    assert "event 020000:" in shown and "event 020002:" in shown and "event 020003:" not in shown
