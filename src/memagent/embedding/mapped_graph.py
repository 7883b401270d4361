"""An ONNX graph optimised once and saved with its weights in a separate, page-aligned file, so a
session maps the weights instead of copying them.

Loading a self-contained ``.onnx`` file makes onnxruntime parse the whole protobuf (weights
included) onto the heap, copy every weight into a tensor of its own and run the graph optimiser,
which makes more copies: for the 34 MB int8 MiniLM graph a session cost ~57 MB of resident memory
that is never given back. Here the optimiser runs once, on this machine, and its output is saved
in two files beside the source graph in the cache:

- ``<source stem>-mapped-m<version>-ort<onnxruntime version>-<machine>.onnx``: the optimised
  graph, a few tens of kB (each onnxruntime and processor architecture has its own: two
  installations sharing a home do not undo each other's work);
- ``….weights``: its weights, each large one at a page-aligned
  offset; onnxruntime maps them read-only (``mmap``) instead of reading them, so their pages are
  shared with the page cache and with every other process using the model, and rows of the
  embedding table a text never uses are never read at all;
- ``….json``: the record: sha256, size and mtime of both files, the
  sha256 of the source graph, the onnxruntime version and the machine that made them.

A session then opens the saved graph with the optimiser off (it would only redo the same work).
The vectors are the same, bit for bit, as a session that optimises the source graph itself.

The pair is verified like the graphs it derives from: by size and mtime against the record on
every start, by a full hash when those differ; a pair that does not match its record, was made
from another source graph or by another onnxruntime or machine is made again. Both files are
written in a private folder, hashed there, and moved into place (weights first), then the record
of what was built: a pair mixed by two processes saving at once fails its record and is made
again rather than used.

Heavy imports (onnxruntime) stay with the caller, which passes the module in.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from memagent.embedding.model_files import EmbedderUnavailable, sha256_file
from memagent.fsutil import atomic_write, make_dirs
from memagent.jsontypes import JsonObject

if TYPE_CHECKING:
    from types import ModuleType

    from onnxruntime import SessionOptions

MAPPED_VERSION = 1  # bump when what save_mapped_graph writes changes
WEIGHTS_SUFFIX = ".weights"
MIN_EXTERNAL_BYTES = 1024  # smaller initializers stay inside the graph file (onnxruntime copies them)


def mapped_graph_path(source: Path, ort: ModuleType) -> Path:
    """Where the optimised graph made from ``source`` by this onnxruntime on this kind of machine
    lives (its weights and record beside it)."""
    maker = f"ort{ort.__version__}-{platform.machine()}"
    safe = "".join(c if c.isalnum() or c in ".-" else "_" for c in maker)
    return source.with_name(f"{source.stem}-mapped-m{MAPPED_VERSION}-{safe}.onnx")


def _weights_path(graph: Path) -> Path:
    return graph.with_suffix(WEIGHTS_SUFFIX)


def _maker(ort: ModuleType) -> JsonObject:
    """What the saved optimisation depends on besides the source graph."""
    return {"onnxruntime": str(ort.__version__), "machine": platform.machine(), "mapped_version": MAPPED_VERSION}


def _file_record(path: Path) -> JsonObject:
    st = path.stat()
    return {"sha256": sha256_file(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _unchanged(path: Path, record: object) -> bool | None:
    """True when size and mtime match the record, False when the hash does not, None when only the
    hash can tell (then it matched: the caller records the new stamp)."""
    if not isinstance(record, dict):
        return False
    try:
        st = path.stat()
        if record.get("size") == st.st_size and record.get("mtime_ns") == st.st_mtime_ns:
            return True
        return None if record.get("sha256") == sha256_file(path) else False
    except OSError:
        return False


def mapped_graph_ok(graph: Path, source_sha256: str, ort: ModuleType) -> bool:
    """The optimised graph and its weights match their record, which names this source graph and
    this onnxruntime and machine."""
    sidecar = graph.with_suffix(".json")
    try:
        meta = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(meta, dict) or meta.get("source_sha256") != source_sha256:
        return False
    if any(meta.get(key) != value for key, value in _maker(ort).items()):
        return False
    states = {
        name: _unchanged(path, meta.get(name)) for name, path in (("graph", graph), ("weights", _weights_path(graph)))
    }
    if False in states.values():
        return False
    if None in states.values():  # touched but identical: record the new stamps, hash once
        try:
            _record(graph, source_sha256, ort, _file_record(graph), _file_record(_weights_path(graph)))
        except OSError:
            return False
    return True


def _record(graph: Path, source_sha256: str, ort: ModuleType, graph_file: JsonObject, weights: JsonObject) -> None:
    meta = {"source_sha256": source_sha256, **_maker(ort), "graph": graph_file, "weights": weights}
    atomic_write(graph.with_suffix(".json"), json.dumps(meta).encode("utf-8"), durable=True)


def save_mapped_graph(ort: ModuleType, source: Path, source_sha256: str, options: SessionOptions) -> Path:
    """Optimise ``source`` with ``options`` (all optimisations on) and save the result with its
    weights apart (see the module docstring); returns the saved graph's path.

    Raises :class:`EmbedderUnavailable` when the cache folder cannot be written."""
    graph = mapped_graph_path(source, ort)
    if mapped_graph_ok(graph, source_sha256, ort):
        return graph
    building = graph.with_name(f".{graph.name}.{os.getpid()}.partial")
    try:
        make_dirs(building)
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.optimized_model_filepath = str(building / graph.name)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", _weights_path(graph).name
        )
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", str(MIN_EXTERNAL_BYTES)
        )
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        built = {}
        for made in (_weights_path(graph), graph):
            with open(building / made.name, "rb") as fh:
                os.fsync(fh.fileno())
            built[made] = _file_record(building / made.name)  # a move keeps the file and its stamps
        for made in built:  # the weights first: the graph names them
            os.replace(building / made.name, made)
        _record(graph, source_sha256, ort, built[graph], built[_weights_path(graph)])
    except OSError as exc:
        raise EmbedderUnavailable(f"cannot save the optimised graph in {graph.parent}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(building, ignore_errors=True)
    if not mapped_graph_ok(graph, source_sha256, ort):
        raise EmbedderUnavailable(f"the optimised graph {graph} does not match its record")
    return graph


__all__ = ["mapped_graph_ok", "mapped_graph_path", "save_mapped_graph"]
