"""A real ``kill -9`` of a working session: the transcript still resumes, losing no completed message."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from memagent.context.resume import latest_session_id, load_session
from memagent.llm.invariants import request_problems

TARGET = Path(__file__).with_name("kill_target.py")


def completed_messages(path: Path) -> list[dict]:
    """Message records of every complete line, from the last compaction's kept_from onward."""
    raw = path.read_bytes()
    lines = raw[: raw.rfind(b"\n") + 1].splitlines()
    records = [json.loads(line) for line in lines]
    messages = [r for r in records if r["type"] == "message"]
    compactions = [r for r in records if r["type"] == "compaction"]
    if compactions:
        ids = [m["id"] for m in messages]
        messages = messages[ids.index(compactions[-1]["kept_from"]) :]
    return messages


def test_sigkill_mid_session_then_resume(tmp_path):
    rng = random.Random(3)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1]) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for attempt in range(3):
        root = tmp_path / f"run{attempt}"
        root.mkdir()
        process = subprocess.Popen([sys.executable, str(TARGET), str(root)], stdout=subprocess.PIPE, env=env)
        try:
            assert process.stdout.readline().strip() == b"ready"
            time.sleep(rng.uniform(0.2, 0.8))
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        transcripts = root / ".transcripts"
        session_id = latest_session_id(transcripts)
        resumed = load_session(transcripts, session_id)
        assert request_problems(resumed.messages) == []
        assert resumed.compactions >= 1
        blocks = [b for m in resumed.messages for b in m["content"]]
        for record in completed_messages(transcripts / f"{session_id}.jsonl"):
            for block in record["content"]:
                assert block in blocks
