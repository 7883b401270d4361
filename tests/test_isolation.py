"""The suite cannot write into the real home folder: HOME is a temp dir, and the guard notices."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import describe_changes, snapshot


def test_home_and_memagent_home_are_temp_dirs(real_home_untouched, isolated_env, tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    home = Path(os.environ["HOME"])
    assert home != real_home_untouched and base in home.parents
    assert Path(os.path.expanduser("~")) == home
    assert base in isolated_env.parents and Path(os.environ["MEMAGENT_HOME"]) == isolated_env
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.path.expanduser('~'))"], capture_output=True, text=True, check=True
    )
    assert Path(child.stdout.strip()) == home  # subprocesses inherit the temp home


def test_the_guard_sees_created_changed_and_removed_files(tmp_path):
    root = tmp_path / ".memagent"
    (root / "cache").mkdir(parents=True)
    (root / "cache" / "graph.onnx").write_bytes(b"x")
    (root / "history").write_text("a")
    before = snapshot(root)
    (root / "history").write_text("a longer line")
    (root / "cache" / "graph.onnx").unlink()
    (root / "config.toml").write_text("")
    assert describe_changes(before, snapshot(root)) == [
        "created config.toml",
        "removed cache/graph.onnx",
        "changed history",
    ]
    assert snapshot(tmp_path / "absent") == {}


def test_foreign_package_caches_are_not_watched(tmp_path):
    cache = tmp_path / ".cache"
    (cache / "pip").mkdir(parents=True)
    (cache / "pip" / "wheel").write_text("w")
    (cache / "chroma").mkdir()
    (cache / "chroma" / "model.onnx").write_text("m")
    assert list(snapshot(cache)) == ["chroma/model.onnx"]
