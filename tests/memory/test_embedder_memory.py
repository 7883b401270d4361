"""The embedder's session maps its weights: the graph optimised once, saved with its weights apart,
verified like the graphs it comes from; same vectors as a session that loads the graph whole, in
about half the memory."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from memagent.embedding import embedders as emb
from memagent.embedding import mapped_graph
from memagent.embedding.embedders import OnnxEmbedder, OnnxInt8Embedder, load_embedder, verified_model_files

REPO = Path(__file__).resolve().parents[2]
TEXTS = [
    "The user prefers pytest-xdist for running the test suite.",
    "Deploy the service with docker compose on port 8080.",
    "how do I run the tests?",
    "Ünïcödé ✓ and emoji 🎉",
    "word " * 300,  # truncated at 256 tokens
    " ",
]
# A session's resident growth, measured on this model (int8): plain 58.7 MB, mapped 30.4 MB
# (tests/memory/test_embedder_memory.py's script, onnxruntime 1.32, 2 cores); the bound is the
# mapped figure with half again as margin, and the plain session must exceed it.
SESSION_GROWTH_BOUND_MB = 46


def _card_texts() -> list[str]:
    data = json.loads((REPO / "bench" / "data" / "coding_memory.json").read_text(encoding="utf-8"))
    return [card["content"] for card in data["cards"]]


class PlainInt8(OnnxInt8Embedder):
    """The int8 embedder with the session that loads the graph whole (the reference)."""

    def _open_session(self, ort, graph):
        return emb.plain_session(ort, graph)


class PlainFp32(OnnxEmbedder):
    """The fp32 embedder with the session that loads the graph whole (the reference)."""

    def _open_session(self, ort, graph):
        return emb.plain_session(ort, graph)


def _copy_cache(source: Path, target: Path, *, mapped: bool = True) -> Path:
    """A cache holding the int8 graph (hard links: never written in place) and, with ``mapped``,
    copies of its optimised graph (a test damages those in place)."""
    target.mkdir()
    for path in source.iterdir():
        if path.name == "minilm-verified.json" or ("-int8-" in path.name and "-mapped-" not in path.name):
            os.link(path, target / path.name)
        elif mapped and "-int8-" in path.name and "-mapped-" in path.name:
            shutil.copy2(path, target / path.name)
    return target


def _mapped_files(cache: Path) -> dict[str, Path]:
    files = verified_model_files()
    graph = mapped_graph.mapped_graph_path(emb.int8_cache_path(files.weights_sha256, cache), _ort())
    return {"graph": graph, "weights": graph.with_suffix(".weights"), "record": graph.with_suffix(".json")}


@pytest.mark.parametrize(
    "kind, plain_kind", [(OnnxInt8Embedder, PlainInt8), (OnnxEmbedder, PlainFp32)], ids=["int8", "fp32"]
)
def test_mapped_and_plain_sessions_give_the_same_vectors(kind, plain_kind, int8_embedder, onnx_embedder, graph_cache):
    files = verified_model_files()
    mapped, plain = kind(files, cache_dir=graph_cache), plain_kind(files, cache_dir=graph_cache)
    for texts in (TEXTS, _card_texts()[:70], [TEXTS[2]]):  # mixed lengths, two batches and a bit, one query
        ours, theirs = mapped.embed(texts), plain.embed(texts)
        assert ours.shape == theirs.shape == (len(texts), 384)
        assert float(np.abs(ours - theirs).max()) <= 1e-6


GROWTH_SCRIPT = """
import sys
import numpy, onnxruntime
from pathlib import Path
from memagent.embedding import embedders

def resident_mb():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS")) / 1024

source = Path(sys.argv[2])
before = resident_mb()
if sys.argv[1] == "mapped":
    session = embedders.mapped_session(onnxruntime, source)
else:
    session = embedders.plain_session(onnxruntime, str(source))
with open("/proc/self/maps") as fh:
    mapped = any(line.rstrip().endswith(".weights") for line in fh)
print(resident_mb() - before, mapped)
"""


def _session_growth(kind: str, source: Path) -> tuple[float, bool]:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(GROWTH_SCRIPT), kind, str(source)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"},
    )
    growth, mapped = out.stdout.split()
    return float(growth), mapped == "True"


def test_a_session_costs_half_the_memory_of_loading_the_graph_whole(int8_embedder, graph_cache):
    source = emb.int8_cache_path(verified_model_files().weights_sha256, graph_cache)
    assert mapped_graph.mapped_graph_ok(_mapped_files(graph_cache)["graph"], emb._recorded_sha256(source), _ort())
    growth, mapped = _session_growth("mapped", source)
    plain_growth, plain_mapped = _session_growth("plain", source)
    assert mapped and not plain_mapped  # the weights file is mapped, not read
    assert growth <= SESSION_GROWTH_BOUND_MB < plain_growth, (growth, plain_growth)


def _ort():
    import onnxruntime

    return onnxruntime


def test_the_optimised_graph_is_saved_once_with_its_record(int8_embedder, graph_cache):
    paths = _mapped_files(graph_cache)
    source = emb.int8_cache_path(verified_model_files().weights_sha256, graph_cache)
    record = json.loads(paths["record"].read_text())
    assert record["source_sha256"] == json.loads(source.with_suffix(".json").read_text())["sha256"]
    assert record["onnxruntime"] == _ort().__version__ and record["mapped_version"] == mapped_graph.MAPPED_VERSION
    assert f"-ort{_ort().__version__}-{platform.machine()}." in paths["graph"].name  # each has a pair of its own
    for name in ("graph", "weights"):
        assert record[name]["sha256"] == emb.sha256_file(paths[name])
    assert paths["graph"].stat().st_size < 1_000_000 < paths["weights"].stat().st_size  # the weights live apart
    with open("/proc/self/maps", encoding="utf-8") as maps:  # the loaded embedder's session maps them
        assert any(line.rstrip().endswith(str(paths["weights"])) for line in maps)
    stamps = {name: path.stat().st_mtime_ns for name, path in paths.items()}
    assert load_embedder("int8", cache_dir=graph_cache).name == int8_embedder.name
    assert {name: path.stat().st_mtime_ns for name, path in paths.items()} == stamps  # reused, not saved again


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damaged", ["weights", "graph"])
def test_a_damaged_optimised_graph_is_saved_again(damaged, int8_embedder, graph_cache, tmp_path):
    cache = _copy_cache(graph_cache, tmp_path / "cache")
    paths, originals = _mapped_files(cache), _mapped_files(graph_cache)
    _flip_a_byte(paths[damaged])
    again = load_embedder("int8", cache_dir=cache)
    assert again.name == int8_embedder.name and again.fallback_reasons == []
    assert paths[damaged].read_bytes() == originals[damaged].read_bytes()  # saved again, deterministically
    np.testing.assert_array_equal(again.embed(TEXTS), int8_embedder.embed(TEXTS))


@pytest.mark.parametrize(
    "field, value", [("onnxruntime", "0.0.1"), ("source_sha256", "0" * 64), ("machine", "another")]
)
def test_a_record_of_another_source_or_runtime_is_not_trusted(field, value, int8_embedder, graph_cache, tmp_path):
    cache = _copy_cache(graph_cache, tmp_path / "cache")
    record_path = _mapped_files(cache)["record"]
    record = json.loads(record_path.read_text())
    record_path.write_text(json.dumps({**record, field: value}))
    again = load_embedder("int8", cache_dir=cache)
    assert json.loads(record_path.read_text())[field] == record[field]  # made again, recorded afresh
    np.testing.assert_array_equal(again.embed(TEXTS), int8_embedder.embed(TEXTS))


def test_a_cache_that_cannot_take_the_optimised_graph_falls_back_to_the_plain_session(
    int8_embedder, graph_cache, tmp_path
):
    cache = _copy_cache(graph_cache, tmp_path / "cache", mapped=False)
    _mapped_files(cache)["weights"].mkdir()  # os.replace onto a folder fails, as on a read-only cache
    embedder = load_embedder("int8", cache_dir=cache)
    assert embedder.name == int8_embedder.name and embedder.fallback_reasons == []
    np.testing.assert_array_equal(embedder.embed(TEXTS), int8_embedder.embed(TEXTS))
    assert not _mapped_files(cache)["graph"].exists()
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # its private folder is gone


def test_a_save_left_by_a_process_that_quit_is_swept(int8_embedder, graph_cache, tmp_path):
    cache = _copy_cache(graph_cache, tmp_path / "cache", mapped=False)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    left = cache / f".{_mapped_files(cache)['graph'].name}.{child.pid}.partial"
    left.mkdir()
    (left / "half.weights").write_bytes(b"x" * 64)
    load_embedder("int8", cache_dir=cache)
    assert not left.exists() and _mapped_files(cache)["graph"].is_file()
