"""Private folders: every folder memagent makes for its data, and every missing parent on the
way, is 0700 whatever the umask; existing folders on the way are left alone."""

from __future__ import annotations

import os
import stat

from memagent.fsutil import atomic_write, make_dirs, private_dir


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_missing_parents_are_private_too(tmp_path):
    old = os.umask(0o022)
    try:
        target = make_dirs(tmp_path / "home" / ".memagent" / "memory" / "cards")
    finally:
        os.umask(old)
    for folder in (tmp_path / "home", tmp_path / "home" / ".memagent", target.parent, target):
        assert mode(folder) == 0o700, folder


def test_existing_folders_are_left_alone_and_private_dir_tightens_only_its_own(tmp_path):
    shared = tmp_path / "project"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    private_dir(shared / ".memory" / "private")
    assert mode(shared) == 0o755
    assert mode(shared / ".memory") == 0o700 and mode(shared / ".memory" / "private") == 0o700
    loose = tmp_path / "loose"
    loose.mkdir()
    os.chmod(loose, 0o777)
    private_dir(loose)
    assert mode(loose) == 0o700


def test_new_mode_applies_to_new_files_only(tmp_path):
    fresh = tmp_path / "card.md"
    atomic_write(fresh, "x", new_mode=0o600)
    assert mode(fresh) == 0o600
    os.chmod(fresh, 0o644)
    atomic_write(fresh, "y", new_mode=0o600)
    assert mode(fresh) == 0o644  # an existing file keeps the mode its owner gave it
