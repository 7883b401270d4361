"""A Python script that runs memagent in a process of its own, for tests that look inside that
process (which modules it loaded, what a library did): against a fake Messages API that answers
"Done.", with the ONNX embedder; the script prints its findings on stderr after a tag."""

from __future__ import annotations

import json
import subprocess
import sys

from fakeapi import FakeAnthropic, text


def run_script(script: str, root, cli_env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``python -c SCRIPT ARGS -C ROOT``; asserts it exits 0."""
    with FakeAnthropic(responder=lambda body: text("Done.")) as fake:
        env = {**cli_env, "ANTHROPIC_BASE_URL": fake.url, "MEMAGENT_EMBEDDER": "onnx"}
        out = subprocess.run(
            [sys.executable, "-c", script, *args, "-C", str(root)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert out.returncode == 0, out.stderr[-2000:]
    return out


def tagged(stderr: str, tag: str):
    """The JSON the script printed after ``TAG `` on stderr."""
    line = next(ln for ln in stderr.splitlines() if ln.startswith(f"{tag} "))
    return json.loads(line.split(" ", 1)[1])
