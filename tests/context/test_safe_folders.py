"""memagent's own folders are never reached through a symlink, and retention deletes only what
memagent wrote (real files, real symlinks, real task store)."""

from __future__ import annotations

import json
import os
import stat
from datetime import timedelta
from pathlib import Path

import pytest

from memagent.context.transcript import (
    TranscriptError,
    TranscriptWriter,
    iter_transcripts,
    prune_transcripts,
    written_by_memagent,
)
from memagent.fsutil import UnsafePath, private_dir, refuse_symlinks, resolves_inside
from memagent.tasks.store import TaskStore

OLD = 1_000_000_000


def transcript(folder: Path, session_id: str, first: dict, *, outputs: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.jsonl"
    path.write_text(json.dumps(first) + "\n")
    if outputs:
        (folder / session_id).mkdir()
        (folder / session_id / "out.log").write_text("x\n")
    os.utime(path, (OLD, OLD))
    return path


def memagents(folder: Path, session_id: str) -> Path:
    return transcript(folder, session_id, {"type": "session_start", "session_id": session_id})


def test_retention_deletes_only_memagents_own_transcripts(tmp_path: Path) -> None:
    folder = tmp_path / ".transcripts"
    mine = memagents(folder, "20200101-000000-aaaa")
    other_tool = transcript(folder, "20200101-000000-bbbb", {"type": "message", "role": "user"})
    renamed = transcript(folder, "notes", {"type": "session_start", "session_id": "someone-else"})
    garbage = folder / "broken.jsonl"
    garbage.write_bytes(b"\xff\xfe not json\n")
    os.utime(garbage, (OLD, OLD))
    removed = prune_transcripts(folder, timedelta(days=1))
    assert removed == [mine.stem]
    assert not mine.exists() and not (folder / mine.stem).exists()
    for kept in (other_tool, renamed, garbage):
        assert kept.exists()
    assert (folder / other_tool.stem / "out.log").exists()


def test_retention_refuses_a_symlinked_folder_and_touches_nothing(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    os.chmod(victim, 0o755)
    theirs = memagents(victim, "20200101-000000-aaaa")
    project = tmp_path / "project"
    project.mkdir()
    (project / ".transcripts").symlink_to(victim)
    with pytest.raises(UnsafePath, match=r"\.transcripts is a symlink"):
        prune_transcripts(project / ".transcripts", timedelta(days=1))
    assert theirs.exists() and (victim / theirs.stem / "out.log").exists()
    assert stat.S_IMODE(victim.stat().st_mode) == 0o755


def test_symlinked_transcripts_and_output_folders_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    folder = tmp_path / "project" / ".transcripts"
    mine = memagents(folder, "20200101-000000-aaaa")
    # the output folder of a session swapped for a link, and a linked transcript
    import shutil

    shutil.rmtree(folder / mine.stem)
    (folder / mine.stem).symlink_to(outside)
    (folder / "20200101-000000-cccc.jsonl").symlink_to(outside / "keep.txt")
    prune_transcripts(folder, timedelta(days=1))
    assert (outside / "keep.txt").exists()
    assert [p.name for p in iter_transcripts(folder)] == []


def test_a_transcript_writer_refuses_a_symlinked_folder(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    os.chmod(other, 0o755)
    project = tmp_path / "project"
    project.mkdir()
    (project / ".transcripts").symlink_to(other)
    with pytest.raises(TranscriptError, match="symlink"):
        TranscriptWriter.open(project / ".transcripts", "s1")
    assert list(other.iterdir()) == [] and stat.S_IMODE(other.stat().st_mode) == 0o755
    assert iter_transcripts(project / ".transcripts") is not None
    assert list(iter_transcripts(project / ".transcripts")) == []


def test_private_dir_never_chmods_through_a_link(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    os.chmod(other, 0o755)
    (tmp_path / "link").symlink_to(other)
    private_dir(tmp_path / "link")  # a user-level folder may be a link: it is used, not tightened
    assert stat.S_IMODE(other.stat().st_mode) == 0o755
    with pytest.raises(UnsafePath):
        private_dir(tmp_path / "link" / "sub", inside=tmp_path)
    assert not (other / "sub").exists()


def test_a_task_store_refuses_a_symlinked_folder(tmp_path: Path) -> None:
    other = tmp_path / "other-repo" / ".tasks"
    other.mkdir(parents=True)
    project = tmp_path / "project"
    project.mkdir()
    (project / ".tasks").symlink_to(other)
    with pytest.raises(UnsafePath, match=r"\.tasks is a symlink"):
        TaskStore(project / ".tasks").create("x")
    assert list(other.iterdir()) == []


def test_a_task_store_swapped_between_calls_writes_nowhere_else(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    store = TaskStore(project / ".tasks")
    store.create("first")
    other = tmp_path / "other" / ".tasks"
    other.mkdir(parents=True)
    (project / ".tasks").rename(project / ".tasks-old")
    (project / ".tasks").symlink_to(other)
    with pytest.raises(UnsafePath):
        store.create("second")
    with pytest.raises(UnsafePath):
        store.update(1, status="completed")
    assert list(other.iterdir()) == []


def test_helpers(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert refuse_symlinks(tmp_path, tmp_path / "real" / "missing" / "deeper")
    with pytest.raises(UnsafePath):
        refuse_symlinks(tmp_path, tmp_path / "link" / "x")
    with pytest.raises(UnsafePath):
        refuse_symlinks(tmp_path / "real", tmp_path / "elsewhere")
    assert resolves_inside(tmp_path / "link" / "f", tmp_path / "real")
    assert not resolves_inside(tmp_path / "link", tmp_path / "other")
    assert written_by_memagent(tmp_path / "missing.jsonl") is False
