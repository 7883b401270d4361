"""Atomic file writes and private data folders, shared by every room that saves user data.

A reader (another memagent process, an editor, ``git``) only ever sees the old file or the new
one, never a torn write: the data goes to a temp file in the same directory, which then replaces
the target with ``os.replace``. ``durable=True`` also fsyncs before the rename so a power cut
cannot leave an empty file behind; callers that rewrite many small files at once (the task
graph) may trade that for speed, since a crashed *process* is safe either way.

Private data folders (:func:`private_dir`) are created 0700, their files 0600, and may carry
their own ``.gitignore`` of ``*``: transcripts, saved outputs, the task graph, private memory
cards and the REPL history are nobody else's to read, and not meant to be committed by a
``git add -A``. Every folder memagent creates for its data (:func:`make_dirs`), and every
missing parent on the way to it (``$MEMAGENT_HOME`` itself, when the first command to run is
``memagent memory add`` or ``memagent mcp serve``), is created 0700: whichever command runs first,
nothing memagent writes is readable by other users.

A project's data folders (``.transcripts``, ``.tasks``, ``.memory``) are never reached through a
symlink: a repository that ships ``.transcripts`` as a link to another folder, or a command that
swaps ``.tasks`` for one, gets :class:`UnsafePath` (one line) instead of memagent writing,
``chmod``-ing or deleting elsewhere (:func:`refuse_symlinks`).
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


def atomic_write(
    path: Path, data: bytes | str, *, durable: bool = True, keep_mode: bool = True, new_mode: int | None = None
) -> None:
    """Replace ``path`` with ``data`` atomically; an existing file keeps its permissions, a new one
    gets ``new_mode`` (default: 0666 less the umask). ``keep_mode=False``: 0600 always."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    mode = None
    if keep_mode:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mode = _default_mode() if new_mode is None else new_mode
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


class UnsafePath(OSError):
    """A data folder or file that is a symlink (or reached through one): memagent refuses to
    follow it. ``str()`` is one line."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "a symlink memagent does not follow"


def refuse_symlinks(base: Path, path: Path) -> Path:
    """``path`` when no part of it below ``base`` is a symlink; else :class:`UnsafePath`.

    Parts that do not exist yet are fine (nothing to follow). ``path`` must lie under ``base``
    (lexically); ``base`` itself is trusted as given."""
    try:
        relative = path.relative_to(base)
    except ValueError:
        raise UnsafePath(f"{path} is outside {base}") from None
    current = base
    for part in relative.parts:
        current = current / part
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                shown = relative.as_posix() if current == path else current.relative_to(base).as_posix()
                raise UnsafePath(
                    f"{shown} is a symlink; memagent keeps its data only in real folders inside the "
                    "project (remove the link)"
                )
        except FileNotFoundError:
            break
    return path


def resolves_inside(path: Path, *bases: Path) -> bool:
    """True when ``path``, all symlinks and ``..`` resolved, lies in one of ``bases`` (resolved
    too): what a file memagent reads by itself must do, so a symlink cannot lead it elsewhere."""
    real = Path(os.path.realpath(path))
    for base in bases:
        folder = Path(os.path.realpath(base))
        if real == folder or folder in real.parents:
            return True
    return False


PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
IGNORE_EVERYTHING = "*\n"


def make_dirs(path: Path) -> Path:
    """Create ``path`` and every missing parent with mode 0700 (``Path.mkdir(parents=True)``
    would give the parents the default mode); folders that exist are left as they are."""
    missing: list[Path] = []
    cursor = path
    while not cursor.exists():
        missing.append(cursor)
        if cursor.parent == cursor:
            break
        cursor = cursor.parent
    for folder in reversed(missing):
        with suppress(FileExistsError):  # another process made it first
            folder.mkdir(mode=PRIVATE_DIR_MODE)
    if not path.is_dir():
        path.mkdir()  # raises the reason: a file in the way, a dangling link
    return path


def private_dir(path: Path, *, gitignore: bool = False, inside: Path | None = None) -> Path:
    """Make ``path`` (and missing parents) with mode 0700; tighten it if it already exists.

    With ``inside`` (the project root, for the project's data folders), no part of ``path`` below
    it may be a symlink (:class:`UnsafePath`), checked before and after creating it. A folder
    that is not ours (another owner) or a symlink is never ``chmod``-ed.

    With ``gitignore``, a ``.gitignore`` containing ``*`` is added when missing (an existing one,
    perhaps edited by the user, is kept).
    """
    if inside is not None:
        refuse_symlinks(inside, path)
    make_dirs(path)
    if inside is not None:
        refuse_symlinks(inside, path)
    with suppress(OSError):  # a folder owned by someone else: writing will say why
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & 0o077:
            os.chmod(path, PRIVATE_DIR_MODE, follow_symlinks=False)
    if gitignore:
        ignore = path / ".gitignore"
        if not ignore.exists():
            with suppress(FileExistsError, OSError):
                fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                with os.fdopen(fd, "w") as fh:
                    fh.write(IGNORE_EVERYTHING)
    return path


def open_private_append(path: Path):
    """``path`` opened for appending bytes, unbuffered, created 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE_MODE)
    with suppress(OSError):  # a file from an older version may be world-readable
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, PRIVATE_FILE_MODE)
    return os.fdopen(fd, "ab", buffering=0)


def tree_bytes(root: Path, skip: frozenset[Path] = frozenset()) -> int:
    """Bytes of the regular files under ``root`` (symlinks not followed), leaving out the folders
    in ``skip`` without listing them: a folder of 100k files costs nothing when its sizes are
    known elsewhere."""
    total = 0
    try:
        entries = list(os.scandir(root))
    except OSError:
        return 0
    for entry in entries:
        with suppress(OSError):  # removed while we looked
            if entry.is_dir(follow_symlinks=False):
                if Path(entry.path) not in skip:
                    total += tree_bytes(Path(entry.path), skip)
            elif entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
    return total
