"""A project's stable identity: what names its collections on a shared Chroma server.

It is recorded in ``.memory/project-id`` (committed with the cards) the first time it is needed,
so every clone of the project agrees on it. Until then it is derived from the ``origin`` remote
of the project's git repository (two clones of one repository are one project) or, with no
remote, from the project's absolute path (so ``/a/app`` and ``/b/app`` never share memory).
"""

from __future__ import annotations

import configparser
import hashlib
import re
from pathlib import Path

from memagent.fsutil import atomic_write

IDENTITY_FILE = "project-id"
_VALID = re.compile(r"^p_[0-9a-f]{16}$")


def git_remote(root: Path) -> str | None:
    """The ``origin`` URL from ``.git/config`` (read as a file: no ``git`` process), or ``None``."""
    config = root / ".git" / "config"
    if not config.is_file():
        return None
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read(config, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    url = parser.get('remote "origin"', "url", fallback=None)
    return url.strip() if url and url.strip() else None


def _normalise_remote(url: str) -> str:
    """``git@host:org/app.git`` and ``https://host/org/app`` name the same repository."""
    text = url.strip().lower()
    text = re.sub(r"^[a-z+]+://", "", text)
    text = re.sub(r"^[^@/]+@", "", text)
    text = text.replace(":", "/")
    return re.sub(r"(\.git)?/*$", "", text)


def derived_identity(root: Path) -> str:
    remote = git_remote(root)
    basis = f"remote:{_normalise_remote(remote)}" if remote else f"path:{root.resolve()}"
    return "p_" + hashlib.sha256(basis.encode("utf-8")).hexdigest()[:16]


def project_identity(memory_dir: Path, root: Path, *, record: bool) -> str:
    """The recorded identity, else the derived one (written to ``memory_dir`` when ``record``)."""
    path = memory_dir / IDENTITY_FILE
    try:
        recorded = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        recorded = ""
    if _VALID.match(recorded):
        return recorded
    identity = derived_identity(root)
    if record:
        memory_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(path, identity + "\n", durable=False)
    return identity


__all__ = ["IDENTITY_FILE", "derived_identity", "git_remote", "project_identity"]
