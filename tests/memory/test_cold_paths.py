"""Cold paths import what they use: a one-shot greeting and `memory stats` load neither chromadb
nor onnxruntime; a real question loads the embedder and reads the index's int8 mirror, without
chromadb (the real CLI against the loopback fake API)."""

from __future__ import annotations

from memory.script_runs import run_script, tagged

MODULES_AT_EXIT = """
import atexit, json, runpy, sys
atexit.register(lambda: sys.stderr.write("\\nMODULES " + json.dumps(
    {m: m in sys.modules for m in ("chromadb", "onnxruntime", "anthropic")}) + "\\n"))
sys.argv = ["memagent", *sys.argv[1:]]
runpy.run_module("memagent", run_name="__main__")
"""


def _loaded(paths, cli_env, *args: str) -> dict[str, bool]:
    return tagged(run_script(MODULES_AT_EXIT, paths.root, cli_env, *args).stderr, "MODULES")


def test_a_greeting_loads_no_vector_machinery(stocked, cli_env):
    assert _loaded(stocked, cli_env, "-p", "hi") == {"chromadb": False, "onnxruntime": False, "anthropic": True}


def test_a_question_loads_the_embedder_and_not_chromadb(stocked, cli_env):
    loaded = _loaded(stocked, cli_env, "-p", "when do deploys go out?")
    assert loaded == {"chromadb": False, "onnxruntime": True, "anthropic": True}


def test_memory_stats_and_list_load_no_vector_machinery(stocked, cli_env):
    for command in (["memory", "stats"], ["memory", "list"]):
        assert _loaded(stocked, cli_env, *command) == {"chromadb": False, "onnxruntime": False, "anthropic": False}
