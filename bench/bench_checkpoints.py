"""What checkpoints and a rewind cost on a 10,000-file tree.

Run by hand: ``python bench/bench_checkpoints.py [--files 10000] [--rounds 5]``. Builds a project
of ``--files`` small source files (100 folders, ~1.3 KB each) in a temp folder with its own
$MEMAGENT_HOME, then per round: the first checkpoint of the tree (every file hashed), a
checkpoint with nothing changed (a turn that changed nothing), a checkpoint after a turn that
edited 20 files and added 5, and a restore to the first checkpoint (a rewind). Medians (and the
range) over the rounds; the disk the shadow repository takes, loose and after ``git gc``.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from memagent.checkpoints import ShadowRepo


def make_tree(root: Path, files: int) -> list[Path]:
    rng = random.Random(7)
    paths = []
    for i in range(files):
        path = root / f"pkg{i % 100:03d}" / f"module_{i:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def f{j}(x):\n    return x * {rng.randint(0, 10**6)}\n\n" for j in range(30))
        path.write_text(body)
        paths.append(path)
    (root / ".gitignore").write_text("build/\n*.log\n")
    return paths


CPU: dict[str, float] = {}


def timed(action, label: str = "") -> tuple[float, object]:
    """Wall time of ``action``; the CPU time its git processes used goes to ``CPU[label]`` (on a
    loaded machine the wall time is mostly waiting for a core)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = action()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU[label] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, result


def one_round(files: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "project", Path(tmp) / "home"
        root.mkdir()
        paths = make_tree(root, files)
        repo = ShadowRepo.for_project(home, root)
        first_s, first = timed(lambda: repo.snapshot("bench"), "first")
        same_s, _ = timed(lambda: repo.snapshot("bench"), "same")
        for path in paths[:20]:
            path.write_text(path.read_text() + "# edited\n")
        for k in range(5):
            (root / f"new_{k}.py").write_text("added = True\n")
        edited_s, edited = timed(lambda: repo.snapshot("bench"), "edited")
        restore_s, restored = timed(lambda: repo.restore("bench", first.commit), "restore")  # type: ignore[attr-defined]
        loose = repo.disk_usage()
        subprocess.run(["git", f"--git-dir={repo.git_dir}", "gc", "--quiet"], check=True)
        packed = repo.disk_usage()
        assert len(restored.changes) == 25, restored  # type: ignore[attr-defined]
        assert edited.changed == 25  # type: ignore[attr-defined]
        project_bytes = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        return {
            "first checkpoint (s)": first_s,
            "  git CPU time (s)": CPU["first"],
            "unchanged tree (s)": same_s,
            "  git CPU time (s) ": CPU["same"],
            "after editing 25 files (s)": edited_s,
            "  git CPU time (s)  ": CPU["edited"],
            "restore 25 files (s)": restore_s,
            "  git CPU time (s)   ": CPU["restore"],
            "shadow repo, loose (MB)": loose / 2**20,
            "shadow repo after gc (MB)": packed / 2**20,
            "project itself (MB)": project_bytes / 2**20,
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if shutil.which("git") is None:
        raise SystemExit("git is needed")
    rows = [one_round(args.files) for _ in range(args.rounds)]
    print(f"{args.files} files, {args.rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    print(f"{'measure':<32} {'median':>10} {'min':>10} {'max':>10}")
    for key in rows[0]:
        values = [row[key] for row in rows]
        print(f"{key:<32} {statistics.median(values):>10.3f} {min(values):>10.3f} {max(values):>10.3f}")


if __name__ == "__main__":
    main()
