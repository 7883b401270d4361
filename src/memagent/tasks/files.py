"""Low-level file handling for ``.tasks/``: atomic writes, the lock, file stamps.

Every change to a file is a write to a fresh temporary file in the same directory followed by
``os.replace``, so a reader sees either the old or the new content, never half of either.
Files are not fsync'ed: a crash of the process is safe, a power cut may lose the last writes.

``.tasks`` is never reached through a symlink (a command could swap the folder for a link into
another repository): the folder is checked when the lock is taken and again after, and the
folder of every file is checked right before the file is written (:class:`memagent.fsutil.UnsafePath`).
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memagent import fsutil

LOCK_NAME = ".lock"


def atomic_write(path: Path, data: bytes) -> os.stat_result:
    """Write ``data`` to ``path`` atomically; return the stat of the new file.

    Not fsynced: completing a task rewrites dozens of files, and a crashed process is safe
    without it (only a power cut could lose the last writes)."""
    fsutil.atomic_write(path, data, durable=False, keep_mode=False)  # 0600, like every data file
    return os.stat(path)  # after the rename: renaming changes the ctime


def _same_folder(root: Path, lock_fd: int) -> None:
    """Raise :class:`memagent.fsutil.UnsafePath` when ``root`` became a symlink, or its lock file
    is no longer the one ``lock_fd`` opened (the folder was swapped while we opened it)."""
    fsutil.refuse_symlinks(root.parent, root)
    opened, current = os.fstat(lock_fd), os.lstat(root / LOCK_NAME)
    if (opened.st_dev, opened.st_ino) != (current.st_dev, current.st_ino):
        raise fsutil.UnsafePath(f"{root.name} changed while memagent opened it; not writing there")


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
    fsutil.refuse_symlinks(root.parent, root)
    if create:
        fsutil.private_dir(root, inside=root.parent)
    try:
        fd = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        if create or exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT):
            raise
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _same_folder(root, fd)  # the re-check after open: still the real folder we locked in
        yield True
    finally:
        os.close(fd)  # closing the descriptor releases the lock
