"""One embedder for the user's memagent processes: ``memagent mcp serve`` lends it, with searches of
the vector mirrors, and a process beside it borrows both instead of loading them
(``embedding.shared``, ``memory.mirror_lending``)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from mcp import Client

from mcp_bridge.test_serve import serve_params, text_of
from mcp_kit import lending_mcp_serve
from memagent.embedding.shared import EmbedderLender, borrow, hello, lending_address
from memagent.memory.flat_mirror import FlatMirror, MirrorEmbedder
from memagent.memory.mirror_lending import LentMirrors
from memory.script_runs import run_script, tagged

TEXTS = ["how are the tests run?", "Deploys go out on Tuesdays after the standup", "Ünïcödé ✓ 🎉", " "]

# Runs the real CLI and says what it loaded: the embedding runtimes, chromadb, and how many times
# it read a mirror file's rows itself.
WHAT_LOADED = """
import atexit, json, runpy, sys
import memagent.memory.flat_mirror as fm
reads = []
original = fm.FlatMirror._read
def counted(self, *args):
    reads.append(1)
    return original(self, *args)
fm.FlatMirror._read = counted
atexit.register(lambda: sys.stderr.write("\\nLOADED " + json.dumps({
    "onnxruntime": "onnxruntime" in sys.modules, "tokenizers": "tokenizers" in sys.modules,
    "numpy": "numpy" in sys.modules,
    "chromadb": "chromadb" in sys.modules, "mirror reads": len(reads)}) + "\\n"))
sys.argv = ["memagent", *sys.argv[1:]]
runpy.run_module("memagent", run_name="__main__")
"""


def _described(embedder) -> dict:
    return {"name": embedder.name, "model_id": embedder.model_id, "dim": embedder.dim}


def _answers(address: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        try:
            sock.connect(address)
            sock.sendall(b'{"op": "hello"}\n')
            return sock.recv(1 << 16).endswith(b"\n")
        except OSError:
            return False


def _ranked(out) -> list[tuple[str, float]]:
    return [(hit["card"]["id"], round(hit["parts"]["dense"], 4)) for hit in json.loads(out.stdout)]


def test_a_search_beside_mcp_serve_loads_no_embedder_reads_no_mirror_and_ranks_the_same(stocked, cli_env):
    question = ["memory", "search", "which tests must pass before a deploy?", "--json"]
    alone = run_script(WHAT_LOADED, stocked.root, cli_env, *question)
    assert tagged(alone.stderr, "LOADED")["onnxruntime"] is True
    assert tagged(alone.stderr, "LOADED")["mirror reads"] >= 1
    with lending_mcp_serve(stocked.root, {**cli_env, "MEMAGENT_EMBEDDER": "onnx"}):
        beside = run_script(WHAT_LOADED, stocked.root, cli_env, *question)
    assert tagged(beside.stderr, "LOADED") == {
        "numpy": False,
        "onnxruntime": False,
        "tokenizers": False,
        "chromadb": False,
        "mirror reads": 0,
    }
    assert _ranked(beside) == _ranked(alone)
    assert _ranked(alone)[0][1] > 0.3  # the dense part took part in the ranking


def test_a_print_run_beside_mcp_serve_answers_and_a_save_after_it_is_searchable_alone(stocked, cli_env):
    with lending_mcp_serve(stocked.root, {**cli_env, "MEMAGENT_EMBEDDER": "onnx"}):
        printed = run_script(WHAT_LOADED, stocked.root, cli_env, "-p", "when do deploys go out?")
        assert tagged(printed.stderr, "LOADED")["onnxruntime"] is False
        assert tagged(printed.stderr, "LOADED")["numpy"] is False
        saved = run_script(WHAT_LOADED, stocked.root, cli_env, "memory", "add", "Releases are tagged vX.Y.Z by CI")
        assert tagged(saved.stderr, "LOADED")["onnxruntime"] is False  # borrowed for the write too
        assert tagged(saved.stderr, "LOADED")["mirror reads"] >= 1  # a write appends to rows read here
        lent = run_script(WHAT_LOADED, stocked.root, cli_env, "memory", "search", "how are releases tagged?", "--json")
    alone = run_script(WHAT_LOADED, stocked.root, cli_env, "memory", "search", "how are releases tagged?", "--json")
    assert "Done." in printed.stdout
    assert _ranked(lent) == _ranked(alone)
    assert json.loads(lent.stdout)[0]["card"]["content"] == "Releases are tagged vX.Y.Z by CI"


def test_no_lending_when_the_setting_is_off(stocked, cli_env, monkeypatch):
    for name, value in {**cli_env, "MEMAGENT_EMBEDDER": "onnx", "MEMAGENT_SHARED_EMBEDDER": "false"}.items():
        monkeypatch.setenv(name, value)

    async def search_through_the_server() -> None:
        async with Client(serve_params(stocked.root), cache=None, read_timeout_seconds=120) as client:
            found = await client.call_tool("memory_search", {"query": "when do deploys go out?"})
            assert "Tuesdays" in text_of(found)  # its embedder has loaded: a lending server lends now
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:
                assert not _answers(lending_address(Path(cli_env["MEMAGENT_HOME"])))
                await asyncio.sleep(0.1)

    asyncio.run(search_through_the_server())


# -- the embedder, lent in this process --------------------------------------------------


@pytest.fixture
def lent(int8_embedder, tmp_path):
    lender = EmbedderLender(int8_embedder, lending_address(tmp_path))
    assert lender.start()
    yield lender
    lender.close()


def test_borrowed_vectors_are_the_lenders_bit_for_bit(lent, int8_embedder):
    loads = []
    borrowed = borrow(lent.address, _described(int8_embedder), lambda: loads.append(1) or int8_embedder)
    assert borrowed is not None and borrowed.dim == 384
    vectors = borrowed.embed(TEXTS)
    assert vectors.dtype == np.float32 and np.array_equal(vectors, int8_embedder.embed(TEXTS))
    assert borrowed.embed_lists(TEXTS) == int8_embedder.embed(TEXTS).tolist()  # the same, without numpy
    assert borrowed.embed([]).shape == (0, 384)
    assert loads == [] and borrowed.borrowing


def test_a_borrower_whose_lender_goes_away_embeds_itself(lent, int8_embedder):
    loads = []
    borrowed = borrow(lent.address, _described(int8_embedder), lambda: loads.append(1) or int8_embedder)
    first = borrowed.embed(TEXTS)
    lent.close()
    again = borrowed.embed(TEXTS)
    assert loads == [1] and not borrowed.borrowing and np.array_equal(again, first)
    assert borrowed.fallback_reasons and borrowed.fallback_reasons[0].startswith("shared embedder:")
    assert borrowed.request({"op": "hello"}) is None  # nor does it ask the lender for anything else


def test_a_lender_that_hangs_costs_a_borrower_a_bounded_wait(lent, int8_embedder, tmp_path, monkeypatch):
    from memagent.embedding import shared

    monkeypatch.setattr(shared, "ANSWER_TIMEOUT", 0.3)
    monkeypatch.setattr(shared, "PER_TEXT_TIMEOUT", 0.0)
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # takes connections, never answers
    silent.bind(lending_address(tmp_path / "stopped"))
    silent.listen(16)
    try:
        started = time.monotonic()
        assert borrow(silent.getsockname(), _described(int8_embedder), lambda: None) is None
        loads = []
        borrowed = borrow(lent.address, _described(int8_embedder), lambda: loads.append(1) or int8_embedder)
        borrowed.address = silent.getsockname()  # the lender stops answering mid-session
        vectors = borrowed.embed_lists(TEXTS)
        assert borrowed.request({"op": "hello"}) is None
    finally:
        silent.close()
    assert time.monotonic() - started < 5
    assert loads == [1] and vectors == int8_embedder.embed(TEXTS).tolist()
    assert "timed out" in borrowed.fallback_reasons[0]


def test_only_the_same_model_is_borrowed(lent, int8_embedder):
    assert hello(lent.address) == {**_described(int8_embedder), "protocol": 1}
    assert hello(lending_address(Path("/nonexistent/home"))) is None
    assert borrow(lent.address, {**_described(int8_embedder), "model_id": "all-MiniLM-L6-v2"}, lambda: None) is None
    assert borrow(lent.address, {**_described(int8_embedder), "dim": 0}, lambda: None) is None
    assert borrow(lending_address(Path("/nonexistent/home")), _described(int8_embedder), lambda: None) is None


def test_a_lender_of_another_protocol_is_left_alone(lent, int8_embedder, monkeypatch):
    from memagent.embedding.shared import EmbedderLender

    older = {**_described(int8_embedder), "protocol": 0}  # an mcp serve still running after an upgrade
    monkeypatch.setattr(EmbedderLender, "_answer", lambda self, request: (older, b""))
    assert hello(lent.address) == older
    assert borrow(lent.address, _described(int8_embedder), lambda: None) is None


def test_lender_and_borrower_serve_only_their_own_user(lent, int8_embedder):
    wanted = _described(int8_embedder)
    assert borrow(lent.address, wanted, lambda: None, uid=os.getuid() + 1) is None  # a lender of another user
    lent.uid = os.getuid() + 1  # a lender that takes the borrower for another user
    assert borrow(lent.address, wanted, lambda: None) is None


def test_a_second_lender_on_the_same_address_stands_aside(lent, int8_embedder):
    assert not EmbedderLender(int8_embedder, lent.address).start()


def _raw(address: str, payload: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(address)
        try:
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)
        except BrokenPipeError:  # the lender answered and hung up before reading it all
            pass
        chunks = []
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize(
    "payload, error",
    [
        (b"not json\n", "bad request"),
        (b"[1, 2]\n", "bad request"),
        (b'{"op": "embed"}', "bad request"),  # no end of line
        (b'{"op": "format-disk"}\n', "unknown op"),
        (b'{"op": "embed", "model_id": "all-MiniLM-L6-v2@int8", "texts": "abc"}\n', "bad request"),
        (b'{"op": "embed", "model_id": "all-MiniLM-L6-v2@int8", "texts": [1, 2]}\n', "bad request"),
        (b'{"op": "embed", "model_id": "another", "texts": ["a"]}\n', "another model"),
        (b'{"op": "mirror-search", "folder": "relative"}\n', "unknown op"),  # only when the lender offers it
    ],
)
def test_a_bad_request_gets_an_error_line_and_the_lender_keeps_serving(lent, payload, error):
    answer = json.loads(_raw(lent.address, payload).decode())
    assert error in answer["error"]
    assert _answers(lent.address)


def test_an_oversized_request_is_refused_without_reading_it_all(lent):
    try:  # the lender answers and hangs up; unread bytes may make the kernel reset the connection
        answer = json.loads(_raw(lent.address, b'{"texts": ["' + b"x" * (9 << 20) + b'"]}\n').decode())
        assert "too large" in answer["error"]
    except ConnectionResetError:
        pass
    assert _answers(lent.address)


def test_many_borrowers_at_once_get_their_own_vectors(lent, int8_embedder):
    borrowed = borrow(lent.address, _described(int8_embedder), lambda: int8_embedder)
    results: dict[int, np.ndarray] = {}

    def ask(i: int) -> None:
        results[i] = borrowed.embed([f"card number {i} about deploys"])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, vector in results.items():
        assert np.array_equal(vector, int8_embedder.embed([f"card number {i} about deploys"]))
    assert borrowed.borrowing and len(results) == 12


# -- the mirror, searched by the lender ------------------------------------------------------

EMBEDDER = MirrorEmbedder("model@test", "test", 8)


def _unit(seed: int) -> list[float]:
    vector = np.random.default_rng(seed).normal(size=8)
    return (vector / np.linalg.norm(vector)).tolist()


class InProcess:
    """The lender's ``mirror-search`` without the socket (the answer crosses JSON as it would)."""

    def __init__(self, mirrors: LentMirrors | None = None, answer=None) -> None:
        self.mirrors = mirrors or LentMirrors()
        self.answer = answer
        self.calls = 0

    def request(self, request):
        self.calls += 1
        if self.answer is not None:
            return self.answer
        try:
            return json.loads(json.dumps(self.mirrors.answer(json.loads(json.dumps(request)))))
        except ValueError as exc:
            return {"error": str(exc)}


@pytest.fixture
def folder(tmp_path) -> Path:
    folder = tmp_path / "index"
    folder.mkdir()
    items = [(f"c{i}", _unit(i), i % 5 != 0) for i in range(40)]
    assert FlatMirror(folder, EMBEDDER).replace(items, generation=3)
    return folder


def _own(folder: Path, generation: int) -> FlatMirror:
    mirror = FlatMirror(folder, EMBEDDER)
    assert mirror.load(generation)
    return mirror


def test_lent_rows_are_searched_by_the_lender_with_the_same_answers(folder):
    lender = InProcess()
    mirror = FlatMirror(folder, EMBEDDER, lambda: lender)
    assert mirror.load(3) and mirror.loaded
    queries = [_unit(100), _unit(7)]
    for inactive in (False, True):
        assert mirror.search(queries, 5, inactive=inactive) == _own(folder, 3).search(queries, 5, inactive=inactive)
    assert lender.calls == 2


def test_a_write_reads_the_rows_here_and_the_lender_then_sees_it(folder):
    lender = InProcess()
    mirror = FlatMirror(folder, EMBEDDER, lambda: lender)
    assert mirror.load(3)
    mirror.search([_unit(1)], 3, inactive=False)
    assert mirror.write([("new", _unit(500), True)], deletes=["c1"])
    mirror.commit(4)
    assert mirror.counts() == (32 - 1 + 1, 8)
    beside = FlatMirror(folder, EMBEDDER, lambda: lender)
    assert beside.load(4)
    assert beside.search([_unit(500)], 1, inactive=False)[0][0][0] == "new"
    assert "c1" not in [card_id for card_id, _ in beside.search([_unit(1)], 40, inactive=False)[0]]
    assert lender.calls == 3


def test_a_stale_file_is_not_lent(folder):
    lender = InProcess()
    assert not FlatMirror(folder, EMBEDDER, lambda: lender).load(4)
    assert lender.calls == 0


@pytest.mark.parametrize(
    "answer", [None, {"error": "the mirror is not current"}, {"found": "x"}, {"found": [[["c1", "high"]]]}, {}]
)
def test_a_lender_that_gives_no_answer_leaves_the_rows_to_this_process(folder, answer):
    lender = InProcess(answer=answer) if answer is not None else InProcess()
    if answer is None:
        lender.request = lambda request: None  # the lender has gone
    mirror = FlatMirror(folder, EMBEDDER, lambda: lender)
    assert mirror.load(3)
    expected = _own(folder, 3).search([_unit(2)], 4, inactive=False)
    assert mirror.search([_unit(2)], 4, inactive=False) == expected
    calls = getattr(lender, "calls", 0)
    assert mirror.search([_unit(2)], 4, inactive=False) == expected
    assert getattr(lender, "calls", 0) == calls  # it is not asked again for this file


def test_a_file_replaced_by_another_writer_is_read_afresh_by_the_lender(folder):
    mirrors = LentMirrors()
    lender = InProcess(mirrors)
    mirror = FlatMirror(folder, EMBEDDER, lambda: lender)
    assert mirror.load(3)
    mirror.search([_unit(1)], 1, inactive=False)
    assert FlatMirror(folder, EMBEDDER).replace([("only", _unit(9), True)], generation=5)
    assert mirror.refresh(5)
    assert mirror.search([_unit(1)], 3, inactive=False) == [
        [("only", pytest.approx(float(np.dot(_unit(1), _unit(9))), abs=0.02))]
    ]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"folder": "relative/index"}, "absolute"),
        ({"generation": "3"}, "integers"),
        ({"dim": 0}, "integers"),
        ({"vectors": []}, "1 to 64"),
        ({"vectors": [[0.1] * 7]}, "8 finite"),
        ({"vectors": [[float("nan")] * 8]}, "8 finite"),
        ({"n": -1}, "up to 10000"),
        ({"inactive": "no"}, "boolean"),
    ],
)
def test_the_lender_checks_a_search_request(folder, change, message):
    request = {
        "op": "mirror-search", "folder": str(folder), "model_id": EMBEDDER.model_id, "name": EMBEDDER.name,
        "dim": 8, "generation": 3, "vectors": [_unit(1)], "n": 3, "inactive": False,
    }  # fmt: skip
    with pytest.raises(ValueError, match=message):
        LentMirrors().answer({**request, **change})


def test_the_lender_refuses_a_mirror_of_another_embedder_or_a_symlink(folder, tmp_path):
    request = {
        "op": "mirror-search", "folder": str(folder), "model_id": "another", "name": EMBEDDER.name,
        "dim": 8, "generation": 3, "vectors": [_unit(1)], "n": 3, "inactive": False,
    }  # fmt: skip
    assert "not current" in LentMirrors().answer(request)["error"]
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "vectors.mirror").symlink_to(folder / "vectors.mirror")
    answer = LentMirrors().answer({**request, "model_id": EMBEDDER.model_id, "folder": str(linked)})
    assert "not current" in answer["error"]


def test_the_lender_reads_its_own_projects_mirror_ahead(stocked, open_service):
    service = open_service()
    mirrors = LentMirrors()
    [folder] = mirrors.read_ahead(service)
    assert (folder / "vectors.mirror").is_file()
    info = service.core.embedder_info()
    request = {
        "op": "mirror-search", "folder": str(folder), "model_id": info.model_id, "name": info.name,
        "dim": info.dim, "generation": service.core.stores["project"].catalog.generation(),
        "vectors": service.core.embed(["which tests must pass before a deploy?"]), "n": 1, "inactive": False,
    }  # fmt: skip
    [[(card_id, score)]] = mirrors.answer(request)["found"]
    assert "parser tests" in service.get(card_id).content and score > 0.5
