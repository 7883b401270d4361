"""The vectors of the shared cards by content hash, so that a card is embedded once (and, when the
cache is committed, a clone need not embed the team's cards again).

Layout (in ``.memory/local/vectors/``, or ``.memory/vectors/`` committed with the cards when the
``memory_commit_vectors`` setting is on: see ``memory.layout``)::

    vectors/<model id>/<xx>.vec    one text file per first byte of the content hash
    vectors/.gitattributes         ``*.vec merge=union``: two branches' additions merge

Each ``.vec`` file starts with a header line ``memagent-vectors 1 <model id> <dim>`` followed by
one line per vector: the content hash (the catalog's ``digest_of``: 24 hex digits), a space, and
base64 of a little-endian float32 scale followed by ``dim`` signed bytes (the unit vector times
127 / its largest component). int8 with one scale per vector is a quarter of float32 (~550
bytes a line at 384 dimensions) and changes cosines by ~1e-4, far below what reorders search
results; text lines let git merge two teammates' additions (union merge) and review diffs.

Lines are appended (a cache: a torn last line is skipped) and a later line for a hash wins, so
``memagent memory reindex``, which embeds every card afresh, also replaces whatever a cache held; a
forgotten card's line is removed by rewriting its file atomically. Private cards never get a line.

A repository is untrusted input, so reading is strict and can at worst mis-rank: a file whose
header names another model or dimension is ignored, and a line is used only if its hash is 24 hex
digits and its payload decodes to exactly ``4 + dim`` bytes with a finite, positive scale and a
non-zero vector (which is then normalised). Nothing is executed or unpickled.
"""

from __future__ import annotations

import base64
import binascii
import math
import os
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memagent.fsutil import PRIVATE_FILE_MODE, atomic_write, make_dirs

if TYPE_CHECKING:
    import numpy as np

MAGIC = "memagent-vectors"
FORMAT = "1"
SUFFIX = ".vec"
GITATTRIBUTES = f"# Written by memagent: vector caches merge by keeping both sides' lines.\n*{SUFFIX} merge=union\n"
_KEY = re.compile(r"^[0-9a-f]{24}$")
_MODEL = re.compile(r"^[A-Za-z0-9._@+-]{1,100}$")
_SCALE = struct.Struct("<f")


def int8_rows(vectors: Sequence[Sequence[float]] | np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Vectors as int8, one scale per row: each row divided by its largest component / 127 and
    rounded (the row ≈ int8 × scale). A row that is zero or not finite gets scale 0 and zeros."""
    import numpy as np

    rows = np.asarray(vectors, dtype=np.float32).reshape(-1, dim)
    with np.errstate(invalid="ignore"):
        peaks = np.abs(rows).max(axis=1) if len(rows) else np.zeros(0, np.float32)
    usable = np.isfinite(peaks) & (peaks > 0) & np.isfinite(rows).all(axis=1)
    scales = np.where(usable, peaks / 127.0, 0.0).astype(np.float32)
    safe = np.where(usable[:, None], rows, 0.0) / np.where(usable, scales, 1.0)[:, None]
    return np.clip(np.rint(safe), -127, 127).astype(np.int8), scales


class VectorCache:
    """One store's vector cache for one embedder (see the module docstring)."""

    def __init__(self, folder: Path, model_id: str, dim: int) -> None:
        self.model_id, self.dim = model_id, dim
        self.usable = dim > 0 and bool(_MODEL.match(model_id))
        self.root = folder
        self.folder = folder / model_id if self.usable else folder

    def _shard(self, key: str) -> Path:
        return self.folder / f"{key[:2]}{SUFFIX}"

    def _header(self) -> str:
        return f"{MAGIC} {FORMAT} {self.model_id} {self.dim}\n"

    # -- reading -------------------------------------------------------------------------

    def get(self, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached vectors of these content hashes (unit float32 vectors); absent ones are
        simply missing."""
        wanted: dict[str, set[str]] = {}
        for key in keys:
            if self.usable and _KEY.match(key):
                wanted.setdefault(key[:2], set()).add(key)
        found: dict[str, np.ndarray] = {}
        for prefix, shard_keys in wanted.items():
            found.update(self._read_shard(self.folder / f"{prefix}{SUFFIX}", shard_keys))
        return found

    def _read_shard(self, path: Path, keys: set[str]) -> dict[str, np.ndarray]:
        try:
            with path.open("r", encoding="ascii", errors="replace") as fh:
                if fh.readline() != self._header():
                    return {}
                lines = fh.readlines()
        except OSError:
            return {}
        found = {}
        for line in lines:  # a later line wins: a re-embedded vector replaces what was there
            key, _, payload = line.strip().partition(" ")
            if key in keys:
                vector = self._decode(payload)
                if vector is not None:
                    found[key] = vector
        return found

    def _decode(self, payload: str) -> np.ndarray | None:
        import numpy as np

        try:
            raw = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            return None
        if len(raw) != _SCALE.size + self.dim:
            return None
        (scale,) = _SCALE.unpack_from(raw)
        if not math.isfinite(scale) or scale <= 0.0:
            return None
        vector = np.frombuffer(raw, dtype=np.int8, offset=_SCALE.size).astype(np.float32) * scale
        norm = float(np.linalg.norm(vector))
        if not math.isfinite(norm) or norm == 0.0:
            return None
        return vector / norm

    # -- writing -------------------------------------------------------------------------

    def put(self, items: Mapping[str, Sequence[float]]) -> None:
        """Append the vectors of these content hashes (a cache: failures are ignored)."""
        if not self.usable or not items:
            return
        lines: dict[Path, list[str]] = {}
        for key, vector in items.items():
            encoded = self._encode(vector)
            if _KEY.match(key) and encoded is not None:
                lines.setdefault(self._shard(key), []).append(f"{key} {encoded}\n")
        try:
            self._ensure_folder()
            for path, new in lines.items():
                self._append(path, new)
        except OSError:
            return

    def _encode(self, vector: Sequence[float]) -> str | None:
        import numpy as np

        values = np.asarray(vector, dtype=np.float32).reshape(-1)
        if values.size != self.dim:
            return None
        quantized, scales = int8_rows(values, self.dim)
        if scales[0] == 0.0:
            return None
        return base64.b64encode(_SCALE.pack(float(scales[0])) + quantized[0].tobytes()).decode("ascii")

    def _ensure_folder(self) -> None:
        make_dirs(self.folder)
        attributes = self.root / ".gitattributes"
        if not attributes.exists():
            atomic_write(attributes, GITATTRIBUTES, durable=False)

    def _append(self, path: Path, lines: list[str]) -> None:
        """Append whole lines with one ``write`` (O_APPEND); a new file gets its header first."""
        if not path.exists() or path.stat().st_size == 0:
            atomic_write(path, self._header(), durable=False, new_mode=PRIVATE_FILE_MODE)
        elif not _ends_with_newline(path):
            lines = ["\n", *lines]  # a torn last line stays on a line of its own (and is skipped)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, "".join(lines).encode("ascii"))
        finally:
            os.close(fd)

    def forget(self, keys: Iterable[str]) -> None:
        """Remove these content hashes' lines (every variant's file), rewriting atomically."""
        by_prefix: dict[str, set[str]] = {}
        for key in keys:
            if _KEY.match(key):
                by_prefix.setdefault(key[:2], set()).add(key)
        if not by_prefix or not self.root.is_dir():
            return
        for variant in self.root.iterdir():
            for prefix, gone in by_prefix.items():
                path = variant / f"{prefix}{SUFFIX}"
                try:
                    text = path.read_text(encoding="ascii", errors="replace")
                except OSError:
                    continue
                kept = [line for line in text.splitlines(keepends=True) if line.partition(" ")[0] not in gone]
                if len(kept) != len(text.splitlines()):
                    atomic_write(path, "".join(kept))


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


__all__ = ["int8_rows", "VectorCache"]
