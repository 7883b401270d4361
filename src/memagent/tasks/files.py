"""Low-level file handling for ``.tasks/``: atomic writes, the lock, file stamps.

Every change to a file is a write to a fresh temporary file in the same directory followed by
``os.replace``, so a reader sees either the old or the new content, never half of either.
Files are not fsync'ed: a crash of the process is safe, a power cut may lose the last writes.
"""

from __future__ import annotations

import errno
import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from memagent import fsutil

LOCK_NAME = ".lock"


def atomic_write(path: Path, data: bytes) -> os.stat_result:
    """Write ``data`` to ``path`` atomically; return the stat of the new file.

    Not fsynced: completing a task rewrites dozens of files, and a crashed process is safe
    without it (only a power cut could lose the last writes)."""
    fsutil.atomic_write(path, data, durable=False, keep_mode=False)  # 0600, like every data file
    return os.stat(path)  # after the rename: renaming changes the ctime


def stamp_of(st: os.stat_result) -> tuple[int, int, int, int]:
    """What identifies one version of a file without reading it.

    The inode changes with every atomic replace, the size and times with most edits in place;
    together they tell a cached entry from a changed file.
    """
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


@contextmanager
def directory_lock(root: Path, *, create: bool) -> Iterator[bool]:
    """Hold ``flock(LOCK_EX)`` on ``root/.lock`` for the block; yields whether writing is possible.

    With ``create=False`` a missing directory is not created, and a directory we cannot write
    to (a read-only checkout) is read without the lock rather than refused: readers only ever
    see whole files thanks to the atomic replace.
    """
    if create:
        fsutil.private_dir(root)
    try:
        fd = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        if create or exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT):
            raise
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield True
    finally:
        os.close(fd)  # closing the descriptor releases the lock
