"""The real CLI against the fake server: `memagent -c -p` resumes with the summary, and a
`kill -9` in the middle of a tool call is repaired by the next `-c` with no completed message lost."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fakeapi import FakeAnthropic, text, tool
from memagent.context.history import INTERRUPTED_TOOL
from memagent.context.resume import latest_session_id, load_session
from memagent.llm.invariants import request_problems
from memagent.markers import Marker
from warm_cli import WarmStarters

SUMMARY_OPEN = Marker.SUMMARY.value

SMALL = "claude-haiku-4-5"


def env_for(fake: FakeAnthropic, home: Path, threshold: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "MEMAGENT_"))}
    env.update(
        ANTHROPIC_BASE_URL=fake.url,
        ANTHROPIC_API_KEY="sk-ant-fake",
        MEMAGENT_HOME=str(home),
        MEMAGENT_COMPACT_TOKENS=str(threshold),
        NO_COLOR="1",
    )
    return env


def memagent(
    root: Path, env: dict[str, str], *args: str, timeout: float = 60, starters: WarmStarters | None = None
) -> subprocess.CompletedProcess:
    """The real CLI in a process of its own; forked by ``starters`` when they can (``warm_cli.py``)."""
    flags = ["-C", str(root), "--yes", "--no-memory", *args]
    warm = starters.run(flags, env, "", timeout) if starters is not None else None
    if warm is not None:
        return warm
    return subprocess.run(
        [sys.executable, "-m", "memagent", *flags], env=env, capture_output=True, text=True, timeout=timeout
    )


def reader(body: dict[str, Any]) -> dict[str, Any]:
    """Reads the file named in the newest user request, then answers."""
    if body["model"] == SMALL:
        return text("## Goal\nRead the modules one by one.\n## Next step\nread the next module")
    last = body["messages"][-1]["content"]
    if any(b.get("type") == "tool_result" for b in last):
        return text("Read it.")
    asked = " ".join(b.get("text", "") for b in last if b.get("type") == "text")
    match = re.search(r"read (mod\d+\.py)", asked)
    return tool("read_file", {"path": match.group(1)}) if match else text("Nothing to read.")


def test_continue_resumes_with_the_summary(tmp_path, warm_starters):
    root = tmp_path / "project"
    root.mkdir()
    for number in range(4):
        (root / f"mod{number}.py").write_text(
            "".join(f"value_{number}_{i} = {i}  # padding line\n" for i in range(500))
        )
    with FakeAnthropic(responder=reader) as fake:
        env = env_for(fake, tmp_path / "home", threshold=9_000)
        first = memagent(root, env, "-p", "read mod0.py", starters=warm_starters)
        assert first.returncode == 0, first.stderr
        for number in range(1, 4):
            run = memagent(root, env, "-c", "-p", f"read mod{number}.py", starters=warm_starters)
            assert run.returncode == 0, run.stderr
        assert fake.errors == []
        summaries = [b for b in fake.requests if b["model"] == SMALL]
        assert summaries, "no compaction across the resumed runs"
        last_run_first_request = [b for b in fake.requests if b["model"] != SMALL][-2]
        assert last_run_first_request["messages"][0]["content"][0]["text"].startswith(SUMMARY_OPEN)
        resumed = load_session(root / ".transcripts", latest_session_id(root / ".transcripts"))
        assert resumed.messages[0]["content"][0]["text"].startswith(SUMMARY_OPEN)
        assert resumed.messages[-1]["content"][-1]["text"] == "Read it."


def test_kill_9_mid_tool_call_then_continue(tmp_path, warm_starters):
    root = tmp_path / "project"
    root.mkdir()
    started = root / "started.txt"

    def responder(body: dict[str, Any]) -> dict[str, Any]:
        last = body["messages"][-1]["content"]
        asked = " ".join(b.get("text", "") for b in last if b.get("type") == "text")
        if "what happened" in asked:
            return text("Continuing after the interruption.")
        if any(b.get("type") == "tool_result" for b in last):
            return text("Finished.")
        if "slow" in asked:
            return tool("bash", {"command": f"echo begun > {started.name} && sleep 30"})
        return text("Hello.")

    with FakeAnthropic(responder=responder) as fake:
        env = env_for(fake, tmp_path / "home", threshold=50_000)
        assert memagent(root, env, "-p", "say hello", starters=warm_starters).returncode == 0
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "memagent",
                "-C",
                str(root),
                "--yes",
                "--no-memory",
                "-c",
                "-p",
                "run the slow command",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 30
            while not started.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert started.exists(), "the tool never started"
        finally:
            os.killpg(process.pid, signal.SIGKILL)  # the CLI and the `sleep` it started
            process.wait(timeout=30)
        transcripts = root / ".transcripts"
        killed = latest_session_id(transcripts)
        raw = (transcripts / f"{killed}.jsonl").read_text()
        completed = [json.loads(line) for line in raw.splitlines() if line.strip()]
        dangling = [
            b["id"] for r in completed if r["type"] == "message" for b in r["content"] if b.get("type") == "tool_use"
        ][-1]

        run = memagent(root, env, "-c", "-p", "what happened?", starters=warm_starters)
        assert run.returncode == 0, run.stderr
        assert "Continuing after the interruption." in run.stdout
        assert fake.errors == []
        request = fake.requests[-1]
        assert request_problems(request["messages"]) == []
        repaired = [b for m in request["messages"] for b in m["content"] if b.get("tool_use_id") == dangling]
        assert repaired and repaired[0]["is_error"] and repaired[0]["content"] == INTERRUPTED_TOOL
        sent = json.dumps(request["messages"])
        for record in completed:
            if record["type"] == "message":
                for block in record["content"]:
                    if block.get("type") == "text":
                        assert json.dumps(block["text"]) in sent
