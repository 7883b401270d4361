"""Where a store keeps its files: the part meant for git and the part that never leaves the machine.

A store directory (``<project>/.memory/`` or ``$MEMAGENT_HOME/memory/``)::

    cards/<id>.md          the shared cards: committed and reviewed like code
    project-id             the project's identity (see ``memory.identity``): committed
    vectors/               only with ``memory_commit_vectors`` (or when git tracks it): the
                           committed vector cache
    local/                 everything else, ignored by git on its own (``local/.gitignore`` is ``*``)
        private/<id>.md    cards that never leave this machine (session cards, ``--private``)
        history.jsonl      the learning decisions (see ``memory.learning_history``)
        tombstones.jsonl   ids of forgotten cards and when (no text)
        index/             the catalog and the Chroma index, rebuilt from the card files at will;
                           the live marks of running sessions and the catch-up lock
                           (``memory.catchup``), the day's automatic-write counts (``memory.quota``)
        vectors/           the vector cache, unless it is committed beside the cards

So ``git add .memory`` stages the cards and the identity file and nothing that churns between
branches or could hold a forgotten card's text.

Stores written before this layout kept ``private/``, ``history.jsonl``, ``tombstones.jsonl`` and
``index/`` directly under the store, and the vector cache in ``vectors/``. :func:`migrate_layout`
moves them into ``local/`` once, each with one ``rename`` (nothing is copied, so nothing can be
half-moved); when both places hold a file (two processes of different versions), the two are
merged and nothing is dropped. A ``vectors/`` folder stays where it is when git tracks it or the
``memory_commit_vectors`` setting is on (the team commits it); the store's old ``.gitignore`` goes too when it is memagent's unchanged and git does
not track it (a committed or edited one is the user's).
Nothing in ``cards/`` is rewritten: a card written with an absolute ``scope_id`` keeps it until
its next rewrite, so opening a store never churns git.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from memagent.fsutil import atomic_write, make_dirs, refuse_symlinks

LOCAL_DIR = "local"
PRIVATE_NAME = "private"
INDEX_NAME = "index"
HISTORY_NAME = "history.jsonl"
TOMBSTONE_NAME = "tombstones.jsonl"
VECTORS_NAME = "vectors"
LOCAL_GITIGNORE = (
    "# Written by memagent: everything in this folder stays on this machine (private cards,\n"
    "# history, tombstones, the index). The cards to commit are in ../cards/.\n*\n"
)
_LEGACY_FILES = (HISTORY_NAME, TOMBSTONE_NAME)
_LEGACY_GITIGNORE = (
    "# Written by memagent: the index is rebuilt from the card files; private cards stay here.\nindex/\nprivate/\n"
)
_LEGACY_DIRS = (PRIVATE_NAME, INDEX_NAME)


def local_dir(root: Path) -> Path:
    """The machine-local part of the store at ``root`` (not created here)."""
    return Path(root) / LOCAL_DIR


def ensure_local(root: Path) -> Path:
    """Create the local part with the ``.gitignore`` that keeps all of it out of git; raises
    ``fsutil.UnsafePath`` (an ``OSError``) when a symlink is in the way."""
    local = local_dir(root)
    for inside in (INDEX_NAME, PRIVATE_NAME):  # a repository may ship symlinks here: never followed
        refuse_symlinks(Path(root), local / inside)
    make_dirs(local)
    ignore = local / ".gitignore"
    if not ignore.exists():
        atomic_write(ignore, LOCAL_GITIGNORE, durable=False)
    return local


def index_dir(root: Path) -> Path:
    """The store's index folder, ``local/index`` (not created here): the catalog, the Chroma
    index, the live marks and catch-up lock, the automatic-write counts."""
    return local_dir(root) / INDEX_NAME


def ensure_index(root: Path) -> Path:
    """:func:`index_dir`, created inside the local part (its ``.gitignore`` first, so nothing
    written there is ever staged); raises ``fsutil.UnsafePath`` (an ``OSError``) on a symlink."""
    ensure_local(root)
    return make_dirs(index_dir(root))


def vectors_dir(root: Path, commit: bool = False) -> Path:
    """The vector cache: ``vectors/`` beside the cards when it is to be committed (``commit``) or
    already is (:func:`migrate_layout` leaves only a tracked one there), else the local part's."""
    shared = Path(root) / VECTORS_NAME
    if commit or shared.is_dir() and not shared.is_symlink():
        return shared
    return local_dir(root) / VECTORS_NAME


def legacy_entries(root: Path) -> list[Path]:
    """What a store of the earlier layout still keeps outside ``local/``."""
    root = Path(root)
    found = [root / name for name in _LEGACY_FILES if (root / name).is_file() and not (root / name).is_symlink()]
    found += [root / name for name in _LEGACY_DIRS if (root / name).is_dir() and not (root / name).is_symlink()]
    return found


def migrate_layout(root: Path, *, commit_vectors: bool = False, vectors: bool = True) -> list[str]:
    """Move a store's local files from the earlier layout into ``local/`` (see the module
    docstring); returns one line per thing moved. Cheap when there is nothing to move.
    ``vectors=False`` leaves the vector cache to the store, which knows the setting."""
    moved: list[str] = []
    entries = legacy_entries(root)
    shared_vectors = Path(root) / VECTORS_NAME
    if (
        vectors
        and not commit_vectors
        and shared_vectors.is_dir()
        and not shared_vectors.is_symlink()
        and not (local_dir(root) / VECTORS_NAME).exists()
        and not _git_tracks(shared_vectors)
    ):
        entries.append(shared_vectors)
    if not entries:
        return moved
    local = ensure_local(root)
    for source in entries:
        target = local / source.name
        try:
            if source.is_dir():
                _move_dir(source, target)
            else:
                _move_file(source, target)
        except FileNotFoundError:
            continue  # another process moved it first
        moved.append(f"{source.name} -> {LOCAL_DIR}/{source.name}")
    _drop_legacy_gitignore(Path(root))
    return moved


def _drop_legacy_gitignore(root: Path) -> None:
    ignore = root / ".gitignore"
    try:
        pristine = ignore.read_text(encoding="utf-8") == _LEGACY_GITIGNORE
    except (OSError, UnicodeDecodeError):
        return
    if pristine and not _git_tracks(ignore):
        ignore.unlink(missing_ok=True)


def migrate_store(root: Path, *, commit_vectors: bool, lock_wait: float) -> list[str]:
    """:func:`migrate_layout` under the store's layout lock (``local/.layout.lock``), skipped
    without a lock when there is nothing to move; raises ``TimeoutError`` or ``OSError``."""
    from filelock import FileLock

    root = Path(root)
    shared_vectors = root / VECTORS_NAME
    if not root.is_dir() or not legacy_entries(root) and (commit_vectors or not shared_vectors.is_dir()):
        return []
    with FileLock(str(ensure_local(root) / ".layout.lock"), timeout=lock_wait):  # its Timeout is a TimeoutError
        return migrate_layout(root, commit_vectors=commit_vectors)


def committed_vector_files(root: Path, digests: list[str]) -> list[Path]:
    """The files of a committed vector cache (``vectors/`` beside the cards) that hold vectors
    of these content digests."""
    folder = Path(root) / VECTORS_NAME
    if not folder.is_dir() or folder.is_symlink():
        return []
    shards = {f"{digest[:2]}.vec" for digest in digests if digest}
    return sorted(p for model in folder.iterdir() if model.is_dir() for p in model.iterdir() if p.name in shards)


def _git_tracks(folder: Path) -> bool:
    """Whether git tracks a file in ``folder`` (``False`` outside a repository or without git)."""
    from memagent.gitsafe import GitError, run_git

    try:
        result = run_git(["ls-files", "--", folder.name], folder.parent)
    except (GitError, OSError):
        return False
    return result.returncode == 0 and bool(result.stdout.strip())


def _move_file(source: Path, target: Path) -> None:
    """One ``rename``; when the target exists too (JSON Lines), the old lines go first."""
    if not target.exists():
        os.replace(source, target)
        return
    old = source.read_bytes()
    new = target.read_bytes()
    joined = old if old.endswith(b"\n") or not old else old + b"\n"
    atomic_write(target, joined + new)
    source.unlink(missing_ok=True)


def _move_dir(source: Path, target: Path) -> None:
    """One ``rename``; when the target exists too, the card files it lacks are moved in (the
    newer of two copies of one card wins) and a derived index is dropped (rebuilt from files)."""
    if not target.exists():
        os.rename(source, target)
        return
    if source.name == INDEX_NAME:
        shutil.rmtree(source, ignore_errors=True)
        return
    for entry in list(source.iterdir()):
        into = target / entry.name
        if not entry.is_file() or entry.is_symlink():
            continue  # not a card file memagent wrote: left where it is
        if not into.exists() or entry.stat().st_mtime_ns > into.stat().st_mtime_ns:
            os.replace(entry, into)
        else:
            entry.unlink()  # an older copy of a card the new place already has
    try:
        source.rmdir()
    except OSError:
        pass  # something we did not write is left where it was


__all__ = [
    "HISTORY_NAME",
    "INDEX_NAME",
    "LOCAL_DIR",
    "LOCAL_GITIGNORE",
    "PRIVATE_NAME",
    "TOMBSTONE_NAME",
    "VECTORS_NAME",
    "committed_vector_files",
    "ensure_index",
    "ensure_local",
    "index_dir",
    "legacy_entries",
    "local_dir",
    "migrate_layout",
    "migrate_store",
    "vectors_dir",
]
