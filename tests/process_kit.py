"""Looking for processes from a test: which host processes are still alive with a given marker in
their command line (the sandbox has its own pid namespace, so a command cannot tell us its pid)."""

from __future__ import annotations

import os
from pathlib import Path


def running(marker: str) -> list[int]:
    """Host pids of live processes (not zombies) whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state not in ("Z", "X") and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found
