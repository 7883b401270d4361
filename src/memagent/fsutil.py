"""Atomic file writes, shared by every room that saves user data.

A reader (another memagent process, an editor, ``git``) only ever sees the old file or the new
one, never a torn write: the data goes to a temp file in the same directory, which then replaces
the target with ``os.replace``. ``durable=True`` also fsyncs before the rename so a power cut
cannot leave an empty file behind; callers that rewrite many small files at once (the task
graph) may trade that for speed, since a crashed *process* is safe either way.
"""

from __future__ import annotations

import os
import stat
import tempfile
from contextlib import suppress
from pathlib import Path


def _default_mode() -> int:
    """0o666 minus the process umask, read without changing it (Linux), else 0o644.

    (``os.umask`` can only be read by setting it, which races with other threads.)"""
    with suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    return 0o644


def atomic_write(path: Path, data: bytes | str, *, durable: bool = True, keep_mode: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically; an existing file keeps its permissions."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    mode = None
    if keep_mode:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mode = _default_mode()
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
