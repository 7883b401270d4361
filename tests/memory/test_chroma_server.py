"""The same code path against a real `chroma run` server on loopback (MEMAGENT_CHROMA_URL)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from memagent.config import Settings, project_paths
from memagent.memory.service import MemoryService, MemoryUnavailable


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory):
    binary = Path(sys.executable).parent / "chroma"
    assert binary.exists(), "the chroma CLI ships with chromadb"
    port = _free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.Popen(
        [str(binary), "run", "--path", str(data), "--port", str(port), "--host", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None, "chroma run exited early"
            assert time.monotonic() < deadline, "chroma server did not answer its heartbeat"
            time.sleep(0.1)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_project_memory_on_a_server(chroma_url, paths, embedder):
    settings = Settings(chroma_url=chroma_url)
    first = MemoryService.open(paths, settings, "laptop-1", embedder=embedder)
    card = first.save("The team deploys with Argo CD", "decision", confidence=0.9).card
    first.save("The user likes emoji-free answers", "preference", "user")
    assert (paths.memory / "cards" / f"{card.id}.md").is_file(), "the card file is the truth"
    assert not (paths.memory / "local" / "index" / "chroma.sqlite3").exists(), "the project index is on the server"
    assert (paths.user_memory / "local" / "index" / "chroma.sqlite3").exists(), "user cards stay local"
    identity = (paths.memory / "project-id").read_text().strip()
    info = first.backend_info()
    assert info["stores"]["project"]["remote"] is True and info["stores"]["project"]["index"] == chroma_url
    first.close()

    # A teammate's clone elsewhere: the committed cards and project-id come with it.
    teammate_root = paths.root.parent / "elsewhere" / "renamed-checkout"
    shutil.copytree(paths.memory / "cards", teammate_root / ".memory" / "cards")
    shutil.copy(paths.memory / "project-id", teammate_root / ".memory" / "project-id")
    teammate = MemoryService.open(project_paths(teammate_root), settings, "laptop-2", embedder=embedder)
    hits = teammate.search("how do we deploy?")
    assert [h.card.id for h in hits][:1] == [card.id]
    fixed = teammate.correct(card.id, "The team deploys with Argo CD and Helm charts")
    assert fixed.status == "superseded"
    assert [c.id for c in teammate.chain(card.id)] == [card.id, fixed.card.id]
    assert teammate.save("The team deploys with Argo CD and Helm charts!", "decision").status == "duplicate"
    assert teammate.forget([fixed.card.id]) == 2
    assert teammate.get(card.id) is None and teammate.search("how do we deploy?") == []
    assert (teammate_root / ".memory" / "project-id").read_text().strip() == identity
    teammate.close()


def test_same_directory_name_elsewhere_never_shares_server_memory(chroma_url, tmp_path, embedder):
    settings = Settings(chroma_url=chroma_url)
    a_root, b_root = tmp_path / "a" / "app", tmp_path / "b" / "app"
    a_root.mkdir(parents=True)
    b_root.mkdir(parents=True)
    a = MemoryService.open(project_paths(a_root), settings, "s", embedder=embedder)
    a.save("The app in folder a talks to the billing service", "fact")
    a.close()
    b = MemoryService.open(project_paths(b_root), settings, "s", embedder=embedder)
    b.core.stores["project"].files.ensure_layout()  # a project with (empty) memory of its own
    assert b.search("which service does the app talk to?") == []
    a_id = (a_root / ".memory" / "project-id").read_text()
    assert b.core.stores["project"].location.prefix != a.core.stores["project"].location.prefix and a_id
    b.close()


def test_unreachable_server_is_one_line(paths, embedder):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(MemoryUnavailable) as info:
        MemoryService.open(paths, Settings(chroma_url=f"http://127.0.0.1:{port}"), embedder=embedder)
    assert f"127.0.0.1:{port}" in str(info.value) and "\n" not in str(info.value)
