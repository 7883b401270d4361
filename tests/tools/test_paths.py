"""Path confinement, glob translation and the gitignore subset."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memagent.tools.base import ToolContext, ToolError
from memagent.tools.paths import (
    IgnoreRules,
    compile_glob,
    display_path,
    expand_braces,
    literal_prefix,
    outputs_dir,
    resolve_path,
    walk_files,
)


def test_relative_and_absolute_inside_are_accepted(ctx: ToolContext, project: Path) -> None:
    (project / "src").mkdir()
    assert resolve_path(ctx, "src/a.py") == project.resolve() / "src" / "a.py"
    assert resolve_path(ctx, str(project / "src" / "a.py")) == project.resolve() / "src" / "a.py"
    # going out and coming back in is not an escape
    assert resolve_path(ctx, f"../{project.name}/src/a.py") == project.resolve() / "src" / "a.py"


@pytest.mark.parametrize("raw", ["../outside.txt", "src/../../outside.txt", "/etc/passwd", "~/x", "/"])
def test_escapes_are_refused(ctx: ToolContext, raw: str) -> None:
    with pytest.raises(ToolError, match="Path escapes the project root"):
        resolve_path(ctx, raw)


def test_symlink_pointing_outside_is_refused(ctx: ToolContext, project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (project / "link").symlink_to(outside)
    with pytest.raises(ToolError, match="Path escapes the project root.*symlink"):
        resolve_path(ctx, "link/secret.txt")


def test_symlink_inside_the_root_is_followed(ctx: ToolContext, project: Path) -> None:
    (project / "real").mkdir()
    (project / "alias").symlink_to(project / "real")
    assert resolve_path(ctx, "alias/f.txt") == project.resolve() / "real" / "f.txt"


def test_empty_path_is_an_error(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="empty"):
        resolve_path(ctx, "  ")


def test_outputs_dir_default_and_display(ctx: ToolContext, project: Path) -> None:
    assert outputs_dir(ctx) == project.resolve() / ".transcripts" / "outputs"
    assert display_path(ctx, project.resolve() / "a" / "b.txt") == "a/b.txt"
    assert display_path(ctx, project.resolve()) == "."


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/deep/a.py", True),
        ("src/**", "src/x/y.txt", True),
        ("src/**/test_*.py", "src/test_a.py", True),
        ("src/**/test_*.py", "src/a/b/test_a.py", True),
        ("src/**/test_*.py", "lib/test_a.py", False),
        ("?.txt", "a.txt", True),
        ("?.txt", "ab.txt", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "b.txt", False),
        ("*.{md,txt}", "notes.txt", True),
        ("*.{md,txt}", "notes.rst", False),
        ("a+b(1).txt", "a+b(1).txt", True),
    ],
)
def test_glob_translation(pattern: str, path: str, matches: bool) -> None:
    assert bool(compile_glob(pattern).match(path)) is matches


def test_brace_expansion_and_literal_prefix() -> None:
    assert expand_braces("x.{a,b{c,d}}") == ["x.a", "x.bc", "x.bd"]
    assert expand_braces("{single}") == ["{single}"]
    assert literal_prefix("src/app/**/*.py") == "src/app"
    assert literal_prefix("*.py") == ""
    assert literal_prefix("{a,b}/x.py") == ""


def test_gitignore_subset() -> None:
    rules = IgnoreRules.parse("# comment\n\nbuild/\n*.log\n/dist\ndocs/gen/*.html\n!keep.log\n**/tmp\n")
    assert rules.is_ignored("build", is_dir=True)
    assert rules.is_ignored("sub/build", is_dir=True)
    assert not rules.is_ignored("build", is_dir=False)  # 'build/' only matches directories
    assert rules.is_ignored("x/y/app.log", is_dir=False)
    assert rules.is_ignored("dist", is_dir=True)
    assert not rules.is_ignored("sub/dist", is_dir=True)  # anchored at the root
    assert rules.is_ignored("docs/gen/page.html", is_dir=False)
    assert not rules.is_ignored("docs/page.html", is_dir=False)
    assert rules.is_ignored("a/b/tmp", is_dir=True)
    assert rules.is_ignored("node_modules", is_dir=True)  # fixed names always apply
    assert not rules.is_ignored("src/main.py", is_dir=False)


def test_walk_prunes_ignored_dirs_but_not_below_an_explicit_start(project: Path) -> None:
    for rel in ["a.py", ".git/config", "node_modules/m/i.js", "src/b.py", ".transcripts/outputs/o.log"]:
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text("x")
    root = project.resolve()
    rels = [rel for _, rel in walk_files(root, root, IgnoreRules())]
    assert rels == ["a.py", "src/b.py"]
    inside = [rel for _, rel in walk_files(root, root / ".transcripts", IgnoreRules())]
    assert inside == [".transcripts/outputs/o.log"]


def test_resolve_reports_symlink_loops(ctx: ToolContext, project: Path) -> None:
    os.symlink("loop_b", project / "loop_a")
    os.symlink("loop_a", project / "loop_b")
    with pytest.raises(ToolError):
        resolve_path(ctx, "loop_a/x")


def test_walk_skips_symlinks_leading_outside(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (project / "in.txt").write_text("x")
    (project / "leak.txt").symlink_to(outside / "secret.txt")
    (project / "leakdir").symlink_to(outside)
    (project / "alias.txt").symlink_to(project / "in.txt")
    root = project.resolve()
    assert [rel for _, rel in walk_files(root, root, IgnoreRules())] == ["alias.txt", "in.txt"]


def test_walk_order_is_top_down_and_sorted(project: Path) -> None:
    for rel in ["b/z.txt", "b/a/y.txt", "a/x.txt", "c.txt", "a.txt"]:
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text("x")
    root = project.resolve()
    assert [rel for _, rel in walk_files(root, root, IgnoreRules())] == [
        "a.txt",
        "c.txt",
        "a/x.txt",
        "b/z.txt",
        "b/a/y.txt",
    ]
