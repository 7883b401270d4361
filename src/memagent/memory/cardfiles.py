"""Memory cards as files: the source of truth of a store.

Layout of a local store directory (``<project>/.memory/`` or ``$MEMAGENT_HOME/memory/``): see
``memory.layout``. The shared cards are ``cards/<id>.md`` (meant to be committed and reviewed like
code); private cards (session cards, ``--private``) are ``local/private/<id>.md``, in the part of
the store git ignores.

A card file is Markdown with YAML front matter holding every field but the content, which is the
body::

    ---
    id: m_3fa2c01d9e4b
    memory_type: decision
    scope: project
    confidence: 0.9
    ...
    ---
    Use pytest-xdist for the test suite.

Files are written atomically and created 0600 (git keeps no permissions but the executable
bit, so committed cards are unaffected); private cards (``private/``) stay 0600 in a 0700 folder. A file
that cannot be read (bad YAML, a field out of range, an id that does not match its file name) is
reported by name by :meth:`CardFiles.read` and skipped by every scan; a file whose name is not
UTF-8 is named by :meth:`CardFiles.misnamed` and skipped too. None of them takes memory down.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from pydantic import ValidationError

from memagent.fsutil import PRIVATE_FILE_MODE, atomic_write, make_dirs, private_dir, refuse_symlinks
from memagent.memory.cards import CARD_ID_RE, MemoryCard, iso_utc
from memagent.memory.layout import INDEX_NAME, LOCAL_DIR, PRIVATE_NAME, ensure_local

if TYPE_CHECKING:
    from memagent.memory.provenance import Witness

SHARED_DIR = "cards"
PRIVATE_DIR = f"{LOCAL_DIR}/{PRIVATE_NAME}"
INDEX_DIR = f"{LOCAL_DIR}/{INDEX_NAME}"
SUFFIX = ".md"

Stamp = tuple[int, int, int]  # (mtime_ns, size, inode): changes whenever the file does


class CardFileError(Exception):
    """A card file that cannot be used; ``str()`` names the file and the problem in one line."""


def _loader() -> type:
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _handler():
    """python-frontmatter's YAML handler, parsing with libyaml when it is available."""
    from frontmatter.default_handlers import YAMLHandler

    class FastYAMLHandler(YAMLHandler):
        def load(self, fm: str, **kwargs: object) -> dict[str, object]:
            fields = yaml.load(fm, Loader=_loader())
            return fields if isinstance(fields, dict) else {}  # as python-frontmatter reads a non-mapping

    return FastYAMLHandler()


def _dumper() -> type:
    return getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def render(card: MemoryCard) -> str:
    """The file text of ``card``: YAML front matter (every field but content) and the body."""
    data: dict[str, object] = {}
    for key, value in card.model_dump(exclude={"content"}).items():
        if value is None or value == [] or value == {}:
            continue
        if isinstance(value, datetime):
            value = iso_utc(value)
        elif key == "provenance":
            value = {k: v for k, v in value.items() if v is not None}
            if not value:
                continue
        elif key == "merged_from":
            value = [{k: v for k, v in p.items() if v is not None} for p in value]
        data[key] = value
    head = yaml.dump(data, Dumper=_dumper(), sort_keys=False, allow_unicode=True, default_flow_style=False)
    return f"---\n{head}---\n{card.content}\n"


def parse(text: str, where: str) -> MemoryCard:
    """The card in a file's text; raises :class:`CardFileError` naming ``where``."""
    import frontmatter

    try:
        post = frontmatter.loads(text, handler=_handler())
    except yaml.YAMLError as exc:
        problem = str(exc).strip().splitlines()
        raise CardFileError(f"{where}: bad front matter: {problem[0] if problem else 'invalid YAML'}") from None
    except Exception as exc:  # python-frontmatter raises plain errors for odd input
        raise CardFileError(f"{where}: bad front matter: {type(exc).__name__}: {exc}") from None
    meta = dict(post.metadata or {})
    if not meta:
        raise CardFileError(f"{where}: no front matter (a card file starts with '---' and its fields)")
    meta["content"] = post.content
    try:
        return MemoryCard.model_validate(meta)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ())) or "card"
        raise CardFileError(f"{where}: {loc}: {err.get('msg', 'invalid')}") from None


@dataclass(frozen=True)
class Scan:
    """What a full scan found on disk: the folder times and git commit before it, every card file
    by id with its (path, stamp), and when it started."""

    folders: str
    head: str | None
    found: dict[str, tuple[str, Stamp]]
    started: float
    known: dict[str, tuple[str, Stamp]] | None = None  # the catalog's stamps, read beside it


@dataclass(frozen=True)
class CardFiles:
    """The card files of one local store directory (see the module docstring). A card folder
    that is a symlink is neither read, written nor deleted from (it may lead out of the store)."""

    root: Path

    @property
    def shared(self) -> Path:
        return self.root / SHARED_DIR

    @property
    def private(self) -> Path:
        return self.root / PRIVATE_DIR

    @property
    def index(self) -> Path:
        return self.root / INDEX_DIR

    def folders(self) -> tuple[Path, Path]:
        return self.shared, self.private

    def path_for(self, card_id: str, private: bool) -> Path:
        return (self.private if private else self.shared) / f"{card_id}{SUFFIX}"

    def locate(self, card_id: str) -> Path | None:
        """The file of ``card_id``, shared or private, or ``None``."""
        if not CARD_ID_RE.match(card_id):
            return None
        for folder in self.folders():
            path = folder / f"{card_id}{SUFFIX}"
            if not folder.is_symlink() and path.is_file():
                return path
        return None

    def ensure_layout(self, identity: str | None = None) -> None:
        """Create the folders, the local part git ignores (``memory.layout``) and, given one,
        the project's identity file (see ``memory.identity``)."""
        make_dirs(self.shared)
        ensure_local(self.root)
        if identity is not None:
            from memagent.memory.identity import IDENTITY_FILE

            marker = self.root / IDENTITY_FILE
            if not marker.exists():
                atomic_write(marker, identity + "\n", durable=False)

    identity: str | None = None  # the project's identity, recorded with its first card
    # records what is written and judges what is read (see ``memory.provenance``); None: the
    # files stand as written (the user's own store)
    witness: Witness | None = None

    def portable(self, card: MemoryCard, private: bool) -> MemoryCard:
        """The card as a shared file of a project store holds it: scoped by the project's identity
        (never an absolute local path, as cards written before the identity did) and with the
        files it names relative to the project. Private cards and the user store are unchanged."""
        if private or self.identity is None:
            return card
        update: dict[str, object] = {}
        if card.scope == "project" and card.scope_id != self.identity:
            update["scope_id"] = self.identity
        project = self.root.parent
        files = [_relative(name, project) for name in card.files]
        if files != card.files:
            update["files"] = files
        return card.model_copy(update=update) if update else card

    def write(self, card: MemoryCard, private: bool, *, durable: bool = True) -> Path:
        """Write (or rewrite) the card's file atomically; a card moving between shared and private
        loses its old file."""
        return self.write_many([(card, private)], durable=durable)[0]

    def write_many(self, items: Sequence[tuple[MemoryCard, bool]], *, durable: bool = True) -> list[Path]:
        """Write (card, private) files, each atomically (a temporary file renamed into place: a
        reader or an interruption never meets half a card). The witness records every file of
        the batch in one ledger transaction *before* the files appear, so a file that exists was
        always earned; ``durable=False`` skips the ``fsync`` of each file (see ``fsutil``)."""
        if not items:
            return []
        self.ensure_layout(self.identity)
        rendered = [(card, private, render(card).encode("utf-8")) for card, private in items]
        if self.witness is not None:
            self.witness.wrote_many([(card, data) for card, _, data in rendered])
        paths = []
        for card, private, data in rendered:
            path = self.path_for(card.id, private)
            if private:
                private_dir(path.parent)
            refuse_symlinks(self.root, path)  # a card folder swapped for a link: never written through
            atomic_write(path, data, durable=durable, keep_mode=not private, new_mode=PRIVATE_FILE_MODE)
            other = self.path_for(card.id, not private)
            if other.exists():
                other.unlink()
            paths.append(path)
        return paths

    def read(self, path: Path, *, as_claimed: bool = False) -> MemoryCard:
        """The card in ``path`` as far as it is earned (see ``memory.provenance``), or as the file
        claims it with ``as_claimed``; raises :class:`CardFileError` naming the file."""
        card, data = self.read_with_bytes(path)
        if self.witness is None or as_claimed:
            return card
        return self.witness.earned(card, data)

    def read_with_bytes(self, path: Path) -> tuple[MemoryCard, bytes]:
        """The card as its file claims it, and the file's bytes. A symlink (to a file anywhere)
        is not followed: a card is a file of this store."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as fh:
                data = fh.read()
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise CardFileError(f"{path}: not UTF-8 text") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise CardFileError(f"{path}: a symlink; card files are read only as real files") from None
            raise CardFileError(f"{path}: cannot be read: {exc.strerror or exc}") from None
        card = parse(text, str(path))
        if card.id != path.stem:
            raise CardFileError(f"{path}: its id {card.id} does not match the file name")
        return card, data

    def delete(self, card_id: str) -> Path | None:
        """Remove the card's file; returns the path removed, if any."""
        path = self.locate(card_id)
        if path is not None:
            path.unlink()
        return path

    def folder_stamps(self) -> tuple[int, int]:
        """Modification times of the two folders: they move when a file is added, removed or
        replaced (an atomic save, ``git pull``), not when a file is edited in place."""
        stamps = []
        for folder in self.folders():
            try:
                stamps.append(folder.stat().st_mtime_ns)
            except OSError:
                stamps.append(0)
        return stamps[0], stamps[1]

    def scan(self) -> dict[str, tuple[str, Stamp]]:
        """Every card file by id with its path and stamp: one ``stat`` per file, no reads (the
        full scan; ~3 µs a file, so it runs in the background on large stores)."""
        found: dict[str, tuple[str, Stamp]] = {}
        for folder in self.folders():
            for entry in _entries(folder):
                name = entry.name
                if not name.endswith(SUFFIX) or name.startswith(".") or not _utf8(name) or entry.is_symlink():
                    continue  # a symlinked card is not followed (it may lead anywhere)
                try:
                    st = entry.stat()
                except OSError:
                    continue  # removed while we looked
                found[name[: -len(SUFFIX)]] = (entry.path, (st.st_mtime_ns, st.st_size, st.st_ino))
        return found

    def listing(self) -> dict[str, str]:
        """Every card file by id with its path, from the folder listings alone (no ``stat``):
        what was added, removed or moved between shared and private, at a fraction of a scan."""
        found: dict[str, str] = {}
        for folder in self.folders():
            for entry in _entries(folder):
                name = entry.name
                if name.endswith(SUFFIX) and not name.startswith("."):
                    found[name[: -len(SUFFIX)]] = entry.path
        return found

    def is_private(self, path: Path) -> bool:
        return path.parent == self.private

    def misnamed(self) -> list[str]:
        """One line per card file whose name is not UTF-8 (skipped by every scan), the name shown
        with its undecodable bytes escaped."""
        found = []
        for folder in self.folders():
            for entry in _entries(folder):
                if entry.name.endswith(SUFFIX) and not _utf8(entry.name):
                    shown = os.fsencode(entry.path).decode("utf-8", errors="backslashreplace")
                    found.append(f"{shown}: the file name is not UTF-8; rename it to <id>.md")
        return found


def _relative(name: str, project: Path) -> str:
    """``name`` relative to the project when it is an absolute path inside it."""
    if not os.path.isabs(name):
        return name
    try:
        return Path(name).relative_to(project).as_posix()
    except ValueError:
        return name


def _utf8(name: str) -> bool:
    """A name the file system gave as valid UTF-8 (undecodable bytes arrive as surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _entries(folder: Path) -> Iterator[os.DirEntry]:
    """The entries of a card folder; none when the folder is a symlink (not followed)."""
    if folder.is_symlink():
        return
    try:
        with os.scandir(folder) as it:
            yield from it
    except (FileNotFoundError, NotADirectoryError):
        return


def stamp_of(path: Path) -> Stamp | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


__all__ = ["CardFileError", "CardFiles", "INDEX_DIR", "Scan", "Stamp", "parse", "render", "stamp_of"]
