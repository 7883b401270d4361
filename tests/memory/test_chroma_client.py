"""chromadb is imported without the ``overrides`` package's class-definition checks (a fifth of the
import), on the real CLI's search paths, and every other use of ``overrides`` is still checked."""

from __future__ import annotations

import importlib
import subprocess
import sys
import threading
import types

from memagent.embedding.embedders import LexicalOnlyEmbedder
from memagent.embedding.handle import EmbedderHandle
from memagent.memory.cardfiles import INDEX_DIR
from memagent.memory.chroma_client import overrides_unchecked
from memory.script_runs import run_script, tagged

# Counts the signature checks ``@override`` makes, then runs the real CLI.
COUNT_CHECKS = """
import atexit, json, runpy, sys
import importlib
checker = importlib.import_module("overrides.overrides")  # the module, not its function
calls = []
original = checker.ensure_signature_is_compatible
def counted(*args, **kwargs):
    calls.append(1)
    return original(*args, **kwargs)
checker.ensure_signature_is_compatible = counted
atexit.register(lambda: sys.stderr.write("\\nCHECKS " + json.dumps(
    {"checks": len(calls), "chromadb": "chromadb.api.rust" in sys.modules}) + "\\n"))
sys.argv = ["memagent", *sys.argv[1:]]
runpy.run_module("memagent", run_name="__main__")
"""

# Notes whether numpy was wholly imported when the background import of chromadb began.
NUMPY_FIRST = """
import atexit, json, runpy, sys
import memagent.memory.core as core
real, seen = core.load_chromadb, []
def noting():
    numpy = sys.modules.get("numpy")
    spec = getattr(numpy, "__spec__", None)
    seen.append(numpy is not None and not getattr(spec, "_initializing", False))
    return real()
core.load_chromadb = noting
atexit.register(lambda: sys.stderr.write("\\nNUMPY " + json.dumps(seen) + "\\n"))
sys.argv = ["memagent", *sys.argv[1:]]
runpy.run_module("memagent", run_name="__main__")
"""

# After memagent's import of chromadb, a wrong override elsewhere is still refused.
STILL_CHECKED = """
import importlib
checker = importlib.import_module("overrides.overrides")
before = checker._overrides
from memagent.memory.chroma_client import load_chromadb, local_client
load_chromadb()
assert checker._overrides is before, "the checker was not put back"
from overrides import override
class Base:
    def run(self, a: int) -> int:
        return a
try:
    class Wrong(Base):
        @override
        def run(self, a: str, b: str) -> int:
            return 0
except TypeError:
    print("REFUSED")
"""


def _checks(paths, cli_env, *args: str) -> tuple[dict[str, object], str]:
    # Without its int8 mirror (memory.flat_mirror) the index must be opened through chromadb.
    (paths.memory / INDEX_DIR / "vectors.mirror").unlink(missing_ok=True)
    out = run_script(COUNT_CHECKS, paths.root, cli_env, *args)
    return tagged(out.stderr, "CHECKS"), out.stdout


def test_memory_search_makes_no_override_signature_check(stocked, cli_env):
    seen, stdout = _checks(stocked, cli_env, "memory", "search", "which tests must pass before a deploy?")
    assert seen == {"checks": 0, "chromadb": True}
    assert "parser tests must pass" in stdout


def test_a_question_in_print_mode_makes_no_override_signature_check(stocked, cli_env):
    seen, stdout = _checks(stocked, cli_env, "-p", "when do deploys go out?")
    assert seen == {"checks": 0, "chromadb": True}
    assert "Done." in stdout


def test_other_uses_of_overrides_are_still_checked(cli_env):
    out = subprocess.run(
        [sys.executable, "-c", STILL_CHECKED], env=cli_env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["REFUSED"]


def test_a_changed_overrides_package_leaves_the_import_plain(monkeypatch):
    changed = types.ModuleType("overrides.overrides")  # no ``_overrides`` any more
    monkeypatch.setitem(sys.modules, "overrides.overrides", changed)
    with overrides_unchecked() as skipped:
        assert skipped is False
    assert not hasattr(changed, "_overrides")


def test_only_the_outer_user_puts_the_checker_back():
    checker = importlib.import_module("overrides.overrides")

    original = checker._overrides
    with overrides_unchecked() as outer:
        assert outer is True and checker._overrides is not original
        with overrides_unchecked() as inner:
            assert inner is False
        assert checker._overrides is not original  # the inner one did not restore it early
    assert checker._overrides is original


# --- a cold search imports chromadb while the embedder loads, not after it


class HeldEmbedder(EmbedderHandle):
    """Hands out ``real`` only once ``go`` is set (or after ``wait`` seconds): a slow load."""

    def __init__(self, real, go: threading.Event, wait: float = 10.0) -> None:
        super().__init__(preference="onnx")
        self.real, self.go, self.wait = real, go, wait
        self.waited_in_vain = False

    def get(self):
        if self._embedder is None:
            self.waited_in_vain = not self.go.wait(self.wait)
            self._embedder = self.real
        return self._embedder


def _cold(open_service, embedder, *, wait: float = 10.0, mirror: bool = False):
    """A service over a store with vectors whose embedder is not loaded yet; its index library
    load only notes that it began (chromadb is imported in this process already). Without
    ``mirror`` the index's int8 mirror is removed, so a search must open Chroma."""
    first = open_service()
    first.save("The parser tests must pass before any deploy", "constraint")
    first.close()
    if not mirror:
        (first.core.stores["project"].root / INDEX_DIR / "vectors.mirror").unlink()
    service = open_service(check_embedder=False)  # the index is first opened by the search
    began = threading.Event()
    service.core.embedder_handle = handle = HeldEmbedder(embedder, began, wait)
    service.core.load_index_library = began.set
    return service, handle, began


def test_a_cold_search_starts_the_index_library_before_loading_the_embedder(open_service, embedder):
    service, handle, _ = _cold(open_service, embedder)
    hits = service.search("which tests must pass before a deploy?")
    assert not handle.waited_in_vain, "the embedder was loaded before the index library was asked for"
    assert any("parser tests" in hit.card.content for hit in hits)


def test_the_session_warm_up_starts_the_index_library_before_the_embedder(open_service, embedder):
    service, handle, _ = _cold(open_service, embedder)
    service.warm_up(prefetch=True, upkeep=False)
    assert not handle.waited_in_vain
    assert service.core.stores["project"].vectors is not None and service.core.stores["project"].vectors.opened


def test_the_background_import_begins_after_numpy_is_wholly_imported(stocked, cli_env):
    """Else the embedder, importing numpy on the other thread at the same time, can be handed a
    half-initialised numpy and fail (seen as "cannot load module more than once per process")."""
    (stocked.memory / INDEX_DIR / "vectors.mirror").unlink()  # so that the search must open Chroma
    out = run_script(NUMPY_FIRST, stocked.root, cli_env, "memory", "search", "which tests must pass before a deploy?")
    assert tagged(out.stderr, "NUMPY") == [True]
    assert "parser tests must pass" in out.stdout


def test_a_store_without_vectors_never_loads_the_index_library(open_service, paths):
    lexical = open_service(embedder=LexicalOnlyEmbedder())
    lexical.save("Deploys go out on Tuesdays after the standup", "procedure")
    lexical.close()
    assert not (paths.memory / INDEX_DIR / "chroma.sqlite3").exists()
    service = open_service(embedder=LexicalOnlyEmbedder())
    asked = threading.Event()
    service.core.embedder_handle = HeldEmbedder(LexicalOnlyEmbedder(), threading.Event(), wait=0)
    service.core.load_index_library = asked.set
    hits = service.search("when do deploys go out?")
    service.wait_for_upkeep(5)
    assert not asked.is_set()
    assert any("Tuesdays" in hit.card.content for hit in hits)
