"""The shadow repository of checkpoints: real git, real files, the user's own repository beside it."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from memagent.checkpoints import CheckpointError, ShadowRepo, project_key, session_ref

GIT_ID = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *GIT_ID, *args], check=True, capture_output=True, text=True).stdout


def tree_state(root: Path) -> dict[str, tuple[str, bytes | str]]:
    """Every path under ``root`` except .git: (kind, bytes or link target), with the mode bits."""
    found: dict[str, tuple[str, bytes | str]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path))
            else:
                found[rel] = (oct(path.stat().st_mode & 0o111), path.read_bytes())
    return found


def user_git_state(root: Path) -> dict[str, str]:
    """What a rewind must never touch in the user's own repository."""
    return {
        "index": hashlib.sha256((root / ".git" / "index").read_bytes()).hexdigest(),
        "branches": git(root, "branch", "-a", "-v"),
        "stash": git(root, "stash", "list"),
        "status": git(root, "status", "--porcelain", "--untracked-files=all"),
        "config": (root / ".git" / "config").read_text(),
        "refs": git(root, "for-each-ref"),
    }


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("print('v1')\n")
    (root / "README.md").write_text("readme\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    git(root, "branch", "feature")
    (root / "app.py").write_text("print('stashed work')\n")
    git(root, "stash", "-q")
    (root / "staged.txt").write_text("staged by the user\n")
    git(root, "add", "staged.txt")
    (root / "untracked.txt").write_text("the user's untracked notes\n")
    return root


@pytest.fixture
def repo(project, isolated_env) -> ShadowRepo:
    return ShadowRepo.for_project(isolated_env, project)


def test_restore_is_byte_for_byte_and_leaves_the_users_git_alone(project, repo):
    (project / "bin.dat").write_bytes(bytes(range(256)) * 4)
    (project / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (project / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (project / "run.sh").chmod(0o755)
    os.symlink("app.py", project / "link.py")
    # a hostile .gitattributes: conversions and a filter that would run a program
    (project / ".gitattributes").write_text("* text eol=crlf\n*.txt filter=evil ident\n")
    before_git = user_git_state(project)
    before = tree_state(project)
    first = repo.snapshot("s1", "turn 1")

    (project / "app.py").write_text("print('v2')\n")
    (project / "bin.dat").unlink()
    (project / "crlf.txt").write_bytes(b"changed\n")
    (project / "run.sh").chmod(0o644)
    (project / "new_dir").mkdir()
    (project / "new_dir" / "new.py").write_text("x = 1\n")
    os.unlink(project / "link.py")
    os.symlink("README.md", project / "link.py")
    repo.snapshot("s1", "turn 2")

    restored = repo.restore("s1", first.commit)
    assert tree_state(project) == before
    assert {c.path for c in restored.changes} == {
        "app.py",
        "bin.dat",
        "crlf.txt",
        "run.sh",
        "new_dir/new.py",
        "link.py",
    }
    assert user_git_state(project) == before_git
    assert not (project / "new_dir").exists()


def test_ignored_files_and_memagents_stores_are_neither_kept_nor_touched(project, repo):
    (project / ".gitignore").write_text("build/\n*.log\n")
    (project / "build").mkdir()
    (project / "build" / "out.bin").write_bytes(b"artefact v1")
    (project / "debug.log").write_text("log v1\n")
    for store in (".transcripts", ".memory/cards", ".memory/index", ".tasks"):
        (project / store).mkdir(parents=True, exist_ok=True)
        (project / store / "data").write_text("v1")
    first = repo.snapshot("s1")
    listed = repo._git(["ls-tree", "-r", "--name-only", first.commit]).split()
    assert not any(p.startswith(("build/", ".transcripts", ".memory", ".tasks")) or p.endswith(".log") for p in listed)

    (project / "build" / "out.bin").write_bytes(b"artefact v2")
    (project / "debug.log").write_text("log v2\n")
    for store in (".transcripts", ".memory/cards", ".memory/index", ".tasks"):
        (project / store / "data").write_text("v2")
    (project / "README.md").write_text("edited\n")
    repo.restore("s1", first.commit)
    assert (project / "README.md").read_text() == "readme\n"
    assert (project / "build" / "out.bin").read_bytes() == b"artefact v2"
    assert (project / "debug.log").read_text() == "log v2\n"
    assert all((project / s / "data").read_text() == "v2" for s in (".transcripts", ".memory/cards", ".tasks"))


def test_only_changed_files_count_and_an_unchanged_tree_reuses_its_checkpoint(project, repo):
    for i in range(50):
        (project / f"m{i}.py").write_text(f"n = {i}\n")
    first = repo.snapshot("s1")
    assert first.changed >= 50
    again = repo.snapshot("s1")
    assert again.commit == first.commit and again.changed == 0
    (project / "m3.py").write_text("n = 'three'\n")
    third = repo.snapshot("s1")
    assert third.commit != first.commit and third.changed == 1
    stamp = (project / "m10.py").stat().st_mtime_ns
    repo.restore("s1", first.commit)
    assert (project / "m3.py").read_text() == "n = 3\n"
    assert (project / "m10.py").stat().st_mtime_ns == stamp  # an unchanged file is not rewritten


def test_large_files_are_skipped_and_named(project, isolated_env):
    repo = ShadowRepo.for_project(isolated_env, project, max_file_bytes=1000)
    (project / "small.txt").write_text("small\n")
    (project / "huge.bin").write_bytes(b"x" * 5000)
    taken = repo.snapshot("s1")
    assert taken.skipped == ("huge.bin",)
    assert "huge.bin" not in repo._git(["ls-tree", "-r", "--name-only", taken.commit]).split()
    # a kept file that grows past the limit leaves later checkpoints
    (project / "small.txt").write_bytes(b"y" * 5000)
    later = repo.snapshot("s1")
    assert "small.txt" in later.skipped
    assert "small.txt" not in repo._git(["ls-tree", "-r", "--name-only", later.commit]).split()


def test_a_folder_swapped_for_a_symlink_is_not_written_through(project, repo, tmp_path):
    (project / "pkg").mkdir()
    (project / "pkg" / "mod.py").write_text("original\n")
    first = repo.snapshot("s1")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "mod.py").write_text("not the project's\n")
    (project / "pkg" / "mod.py").unlink()
    (project / "pkg").rmdir()
    os.symlink(outside, project / "pkg")
    repo.restore("s1", first.commit)
    assert (outside / "mod.py").read_text() == "not the project's\n"
    assert not (project / "pkg").is_symlink()
    assert (project / "pkg" / "mod.py").read_text() == "original\n"


def test_a_project_without_git_and_a_restore_that_can_be_undone(tmp_path, isolated_env):
    root = tmp_path / "plain"
    root.mkdir()
    (root / "notes.txt").write_text("v1\n")
    repo = ShadowRepo.for_project(isolated_env, root)
    first = repo.snapshot("s1")
    (root / "notes.txt").write_text("v2\n")
    restored = repo.restore("s1", first.commit)
    assert (root / "notes.txt").read_text() == "v1\n"
    assert not (root / ".git").exists()
    repo.restore("s1", restored.before)  # the rewind itself is undone
    assert (root / "notes.txt").read_text() == "v2\n"


def test_shadow_repository_lives_in_memagent_home_private_and_per_project(project, repo, isolated_env, tmp_path):
    repo.snapshot("s1")
    assert repo.git_dir == isolated_env / "checkpoints" / project_key(project)
    assert repo.git_dir.stat().st_mode & 0o077 == 0
    other = tmp_path / "other"
    other.mkdir()
    assert project_key(other) != project_key(project)
    assert repo.sessions() == ["s1"]


def test_bad_input_is_one_clear_error(project, repo):
    with pytest.raises(CheckpointError, match="not in"):
        repo.restore("s1", "0" * 40)
    with pytest.raises(CheckpointError, match="not a session id"):
        session_ref("../../etc")
    with pytest.raises(CheckpointError, match="not a session id"):
        repo.snapshot("a b")


def test_callers_git_environment_is_ignored(project, repo, monkeypatch, tmp_path):
    """A GIT_DIR or GIT_INDEX_FILE in memagent's environment never redirects the shadow repository."""
    decoy = tmp_path / "decoy-index"
    before = user_git_state(project)
    monkeypatch.setenv("GIT_DIR", str(project / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(decoy))
    repo.snapshot("s1")
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert not decoy.exists()
    assert user_git_state(project) == before


def test_prune_drops_checkpoints_of_removed_sessions(project, repo):
    repo.snapshot("keep")
    (project / "x.txt").write_text("x")
    repo.snapshot("gone")
    assert repo.prune({"keep"}) == ["gone"]
    assert repo.sessions() == ["keep"]


def test_too_many_changed_files_is_one_clear_error(project, isolated_env):
    repo = ShadowRepo.for_project(isolated_env, project, max_changed_files=10)
    for i in range(20):
        (project / f"gen_{i}.js").write_text("x")
    with pytest.raises(CheckpointError, match=r"files changed since the last checkpoint, more than 10.*\.gitignore"):
        repo.snapshot("s1")
    (project / ".gitignore").write_text("gen_*\n")
    assert repo.snapshot("s1").commit
