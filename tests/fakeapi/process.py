"""Run the fake server as a child process (for tests that drive the real CLI in a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

TESTS_DIR = Path(__file__).resolve().parent.parent


class FakeAnthropicProcess:
    """``python -m fakeapi`` in a child process; ``.url``, and ``.requests`` / ``.errors`` read
    back from its log file. Files go into ``workdir`` (e.g. pytest's ``tmp_path``)."""

    def __init__(
        self,
        script: Iterable[Any],
        workdir: str | Path,
        *,
        api_key: str | None = None,
        startup_timeout: float = 15.0,
        max_input_tokens: int | None = None,
        count_tokens: bool = True,
    ) -> None:
        self.workdir = Path(workdir)
        self.script_file = self.workdir / "fakeapi-script.json"
        self.port_file = self.workdir / "fakeapi-port"
        self.log_file = self.workdir / "fakeapi-log.json"
        self.script = list(script)
        self.api_key = api_key
        self.startup_timeout = startup_timeout
        self.max_input_tokens = max_input_tokens
        self.count_tokens = count_tokens
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("fake server process is not running")
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeAnthropicProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.script_file.write_text(json.dumps(self.script), encoding="utf-8")
        self.port_file.unlink(missing_ok=True)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS_DIR), env.get("PYTHONPATH")]))
        cmd = [
            sys.executable,
            "-m",
            "fakeapi",
            "--script",
            str(self.script_file),
            "--port-file",
            str(self.port_file),
            "--log-file",
            str(self.log_file),
        ]
        if self.api_key:
            cmd += ["--api-key", self.api_key]
        if self.max_input_tokens is not None:
            cmd += ["--max-input-tokens", str(self.max_input_tokens)]
        if not self.count_tokens:
            cmd.append("--no-count-tokens")
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + self.startup_timeout
        while not self.port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode() if self.proc.stderr and self.proc.poll() is not None else ""
                self.stop()
                raise RuntimeError(f"fake server process did not start: {err.strip()}")
            time.sleep(0.02)
        self.port = int(self.port_file.read_text())
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()

    def log(self) -> dict[str, Any]:
        try:
            return json.loads(self.log_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"requests": [], "errors": [], "remaining": len(self.script), "too_long": []}

    def wait_for_requests(self, count: int = 1, timeout: float = 10.0) -> bool:
        """Poll the log until ``count`` requests have arrived; False on timeout."""
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.log()["requests"]

    @property
    def errors(self) -> list[str]:
        return self.log()["errors"]

    @property
    def too_long(self) -> list[int]:
        return list(self.log().get("too_long", []))

    @property
    def remaining(self) -> int:
        return int(self.log()["remaining"])

    def __enter__(self) -> FakeAnthropicProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
