"""A CLI process ends without the interpreter's final garbage collections walking every object
it loaded: by the last exit handler, what is still alive is frozen out of the collector."""

from __future__ import annotations

import json
import subprocess
import sys

from fakeapi import FakeAnthropic, text

PROBE = """
import atexit, gc, os, sys
from memagent.cli.main import run
# registered before run(): runs after run's own handler, as the interpreter's last step
atexit.register(lambda: os.write(2, f"frozen={gc.get_freeze_count()} young={gc.get_threshold()[0]}\\n".encode()))
sys.argv = ["memagent", *sys.argv[1:]]
run()
"""


def probe(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, timeout=60)


def frozen(result: subprocess.CompletedProcess) -> int:
    return int(result.stderr.rsplit("frozen=", 1)[1].split()[0])


def test_a_normal_run_and_a_usage_error_both_end_frozen(cli_env):
    ok = probe("--version", env=cli_env)
    assert ok.returncode == 0 and ok.stdout.strip()  # the output was flushed as usual
    assert frozen(ok) > 1_000
    assert "young=10000" in ok.stderr  # the youngest generation is collected less often
    bad = probe("--no-such-flag", env=cli_env)
    assert bad.returncode == 2 and "memagent: " in bad.stderr  # the one-line usage error still printed
    assert frozen(bad) > 1_000


def test_what_a_print_run_wrote_is_complete_after_the_frozen_exit(cli_env, project):
    """The whole session through the probe: the answer printed, the transcript's last record the
    answer, the memory and the session list reading what the run left."""
    with FakeAnthropic([text("all done here")]) as fake:
        env = {**cli_env, "ANTHROPIC_BASE_URL": fake.url}
        result = probe("-C", str(project), "-p", "say done", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "all done here\n" and frozen(result) > 10_000
    (transcript,) = (project / ".transcripts").glob("*.jsonl")
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    messages = [r for r in records if r["type"] == "message"]
    assert messages[-1]["content"] == [{"type": "text", "text": "all done here"}]
    assert records[-1]["type"] == "session_summary"  # the last thing a session writes, at its end
    listed = probe("-C", str(project), "sessions", "list", env=cli_env)
    assert listed.returncode == 0 and transcript.stem in listed.stdout, listed.stdout
