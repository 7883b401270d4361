"""read_file, write_file, edit_file, glob and grep through the registry, as the loop calls them."""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

from memagent.tools.base import ToolContext, ToolRegistry


def write(root: Path, rel: str, text: str = "x\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- read_file ---------------------------------------------------------------------------


def test_read_file_numbers_lines_like_cat_n(call, project: Path) -> None:
    write(project, "a.txt", "alpha\nbeta\ngamma")
    out = call("read_file", path="a.txt")
    assert not out.is_error
    assert out.content == "     1\talpha\n     2\tbeta\n     3\tgamma"


def test_read_file_offset_and_limit_page_through(call, project: Path) -> None:
    write(project, "n.txt", "".join(f"line {i}\n" for i in range(1, 11)))
    out = call("read_file", path="n.txt", offset=4, limit=3)
    assert out.content.splitlines()[:3] == ["     4\tline 4", "     5\tline 5", "     6\tline 6"]
    assert "Showing lines 4-6 of 10" in out.content
    assert "offset=7" in out.content
    tail = call("read_file", path="n.txt", offset=9)
    assert tail.content == "     9\tline 9\n    10\tline 10"  # reaches the end: no paging note


def test_read_file_offset_past_end_and_bad_values(call, project: Path) -> None:
    write(project, "n.txt", "a\nb\n")
    past = call("read_file", path="n.txt", offset=5)
    assert past.is_error and "past the end" in past.content and "2 lines" in past.content
    bad = call("read_file", path="n.txt", offset=0)
    assert bad.is_error and "offset" in bad.content
    # an explicit null means "use the default"
    assert call("read_file", path="n.txt", offset=None, limit=None).content.startswith("     1\ta")


def test_read_file_errors_for_missing_directory_and_binary(call, project: Path) -> None:
    write(project, "config.toml", "")
    missing = call("read_file", path="config.tml")
    assert missing.is_error and "File not found: config.tml" in missing.content
    assert "config.toml" in missing.content  # similar-name hint
    (project / "pkg").mkdir()
    directory = call("read_file", path="pkg")
    assert directory.is_error and "is a directory" in directory.content
    (project / "img.bin").write_bytes(b"\x89PNG\x00\x01" * 500)
    binary = call("read_file", path="img.bin")
    assert binary.is_error and "binary" in binary.content and "2.9 KiB" in binary.content


def test_read_file_latin1_bytes_are_text_and_control_bytes_are_binary(call, project: Path) -> None:
    # Legacy-encoded text used to be called binary; it reads as text now (see test_encodings.py)
    (project / "latin.dat").write_bytes(b"caf\xe9 \xff\xfe au lait\n")
    out = call("read_file", path="latin.dat")
    assert not out.is_error and "café ÿþ au lait" in out.content and "windows-1252" in out.content
    (project / "blob.dat").write_bytes(bytes(range(1, 32)) * 40)
    blob = call("read_file", path="blob.dat")
    assert blob.is_error and "binary" in blob.content


def test_read_file_empty_file(call, project: Path) -> None:
    write(project, "empty.txt", "")
    out = call("read_file", path="empty.txt")
    assert not out.is_error and "empty" in out.content


def test_read_file_truncates_long_lines_and_caps_output(
    call, project: Path, ctx: ToolContext, registry: ToolRegistry
) -> None:
    write(project, "wide.txt", "w" * 5000 + "\nshort\n")
    wide = call("read_file", path="wide.txt").content
    assert "line truncated, 3000 more chars" in wide
    assert wide.splitlines()[-1] == "     2\tshort"

    write(project, "long.txt", "".join(f"{i:04d} " + "y" * 95 + "\n" for i in range(1, 1001)))
    small = ToolContext(root=project, output_cap_chars=2_000)
    out = registry.run("read_file", {"path": "long.txt"}, small)
    assert len(out.content) < 2_300
    match = re.search(
        r"Showing lines 1-(\d+) of 1000 \(output capped at 2000 characters\)\. Use offset=(\d+)", out.content
    )
    assert match and int(match.group(2)) == int(match.group(1)) + 1
    follow = registry.run("read_file", {"path": "long.txt", "offset": int(match.group(2)), "limit": 1}, small)
    assert follow.content.startswith(f"{int(match.group(2)):>6}\t{int(match.group(2)):04d} ")


def test_read_file_huge_single_line_is_truncated_and_counted(call, project: Path) -> None:
    write(project, "min.js", "a" * 300_000 + "\nb" * 2)
    out = call("read_file", path="min.js").content.splitlines()
    assert out[0] == "     1\t" + "a" * 2000 + "… [line truncated, 298000 more chars]"
    assert out[1:] == ["     2\tb", "     3\tb"]
    assert call("read_file", path="min.js", offset=3).content == "     3\tb"


def test_read_file_refuses_escapes(call, project: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("secret")
    for raw in ["../outside.txt", str(tmp_path / "outside.txt")]:
        out = call("read_file", path=raw)
        assert out.is_error and "Path escapes the project root" in out.content
    (project / "sneaky").symlink_to(tmp_path / "outside.txt")
    out = call("read_file", path="sneaky")
    assert out.is_error and "Path escapes the project root" in out.content and "secret" not in out.content


def test_read_file_may_read_an_outputs_dir_outside_the_project(
    registry: ToolRegistry, project: Path, tmp_path: Path
) -> None:
    outputs = tmp_path / "outs"
    outputs.mkdir()
    (outputs / "o.log").write_text("full\n")
    ctx = ToolContext(root=project, outputs_dir=outputs)
    assert registry.run("read_file", {"path": str(outputs / "o.log")}, ctx).content == "     1\tfull"
    assert registry.run("write_file", {"path": str(outputs / "o.log"), "content": "x"}, ctx).is_error


# --- write_file --------------------------------------------------------------------------


def test_write_file_creates_parents_and_reports(call, project: Path) -> None:
    out = call("write_file", path="deep/er/new.py", content="a = 1\nb = 2\n")
    assert not out.is_error
    assert out.content == "Wrote 2 lines (12 bytes) to deep/er/new.py (new file)."
    assert (project / "deep/er/new.py").read_text() == "a = 1\nb = 2\n"
    again = call("write_file", path="deep/er/new.py", content="é")
    assert "overwrote" in again.content and "1 line (2 bytes)" in again.content
    assert (project / "deep/er/new.py").read_text(encoding="utf-8") == "é"


def test_write_file_is_atomic_and_keeps_mode(call, project: Path) -> None:
    script = write(project, "run.sh", "#!/bin/sh\n")
    script.chmod(0o755)
    call("write_file", path="run.sh", content="#!/bin/sh\necho hi\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert sorted(p.name for p in project.iterdir()) == ["run.sh"]  # no temp file left behind


def test_write_file_failure_leaves_no_temp_and_keeps_old_content(call, project: Path, monkeypatch) -> None:
    write(project, "keep.txt", "old\n")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", broken_replace)
    out = call("write_file", path="keep.txt", content="new\n")
    assert out.is_error and "disk on fire" in out.content
    assert (project / "keep.txt").read_text() == "old\n"
    assert sorted(p.name for p in project.iterdir()) == ["keep.txt"]


def test_write_file_through_symlink_updates_target(call, project: Path) -> None:
    target = write(project, "real.txt", "old")
    (project / "alias.txt").symlink_to(target)
    call("write_file", path="alias.txt", content="new")
    assert (project / "alias.txt").is_symlink()
    assert target.read_text() == "new"


def test_write_file_refuses_escape_and_directories(call, project: Path, tmp_path: Path) -> None:
    out = call("write_file", path="../evil.txt", content="x")
    assert out.is_error and "Path escapes the project root" in out.content
    assert not (tmp_path / "evil.txt").exists()
    (project / "d").mkdir()
    assert "is a directory" in call("write_file", path="d", content="x").content
    write(project, "afile", "x")
    assert call("write_file", path="afile/child.txt", content="x").is_error


# --- edit_file ---------------------------------------------------------------------------


def test_edit_file_replaces_a_unique_match(call, project: Path) -> None:
    write(project, "app.py", "def a():\n    return 1\n\n\ndef b():\n    return 2\n")
    out = call("edit_file", path="app.py", old_text="    return 2\n", new_text="    x = 2\n    return x\n")
    assert not out.is_error
    assert out.content == "Edited app.py at line 6: replaced 1 line with 2 lines."
    assert (project / "app.py").read_text().endswith("def b():\n    x = 2\n    return x\n")
    assert sorted(p.name for p in project.iterdir()) == ["app.py"]


def test_edit_file_non_unique_match_says_how_many(call, project: Path) -> None:
    write(project, "dup.py", "x = 1\ny = 2\nx = 1\nx = 1\n")
    out = call("edit_file", path="dup.py", old_text="x = 1", new_text="x = 3")
    assert out.is_error
    assert (
        "occurs 3 times" in out.content and "lines 1, 3, 4" in out.content and "more surrounding context" in out.content
    )
    assert (project / "dup.py").read_text() == "x = 1\ny = 2\nx = 1\nx = 1\n"


def test_edit_file_not_found_shows_closest_lines(call, project: Path) -> None:
    write(project, "m.py", "import os\n\ndef compute_total(items):\n    return sum(items)\n")
    out = call("edit_file", path="m.py", old_text="def compute_totals(items):", new_text="def f(items):")
    assert out.is_error and "not found" in out.content
    assert "3\tdef compute_total(items):" in out.content


def test_edit_file_not_found_whitespace_hint(call, project: Path) -> None:
    write(project, "t.py", "if x:\n\treturn 1\n")
    out = call("edit_file", path="t.py", old_text="if x:\n    return 1", new_text="if x:\n    return 2")
    assert out.is_error and "whitespace is ignored" in out.content


def test_edit_file_rejects_empty_and_identical(call, project: Path) -> None:
    write(project, "f.txt", "abc\n")
    empty = call("edit_file", path="f.txt", old_text="", new_text="x")
    assert empty.is_error and "old_text is empty" in empty.content
    same = call("edit_file", path="f.txt", old_text="abc", new_text="abc")
    assert same.is_error and "identical" in same.content
    missing = call("edit_file", path="nope.txt", old_text="a", new_text="b")
    assert missing.is_error and "File not found" in missing.content


def test_edit_file_keeps_crlf_line_endings(call, project: Path) -> None:
    (project / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    out = call("edit_file", path="w.txt", old_text="one\ntwo\n", new_text="uno\ndos\n")
    assert not out.is_error, out.content
    assert (project / "w.txt").read_bytes() == b"uno\r\ndos\r\nthree\r\n"


def test_edit_file_refuses_binary_and_escape(call, project: Path) -> None:
    (project / "b.bin").write_bytes(b"ab\x00cd")
    assert "binary" in call("edit_file", path="b.bin", old_text="ab", new_text="x").content
    out = call("edit_file", path="/etc/hostname", old_text="a", new_text="b")
    assert out.is_error and "Path escapes the project root" in out.content


# --- glob --------------------------------------------------------------------------------


def make_tree(project: Path) -> None:
    for rel in [
        "main.py",
        "src/app.py",
        "src/util/helpers.py",
        "src/util/data.json",
        "build/gen.py",
        "notes.log",
        ".git/hooks/pre.py",
        ".memory/cards.py",
        ".transcripts/s.py",
        ".tasks/t.py",
        "node_modules/pkg/index.py",
        "src/__pycache__/app.py",
        ".venv/lib/site.py",
        "venv/lib/site.py",
        "dist/out.py",
        "lib/dist/kept.py",
    ]:
        write(project, rel)
    write(project, ".gitignore", "build/\n*.log\n/dist\n")


def test_glob_ignores_vcs_memagent_dirs_and_gitignore(call, project: Path) -> None:
    make_tree(project)
    out = call("glob", pattern="**/*.py")
    assert sorted(out.content.splitlines()) == ["lib/dist/kept.py", "main.py", "src/app.py", "src/util/helpers.py"]
    assert call("glob", pattern="*.log").content.startswith("No files match")


def test_glob_sorts_newest_first(call, project: Path) -> None:
    now = time.time()
    for i, name in enumerate(["old.txt", "mid.txt", "new.txt"]):
        path = write(project, name)
        os.utime(path, (now - 100 + i * 10, now - 100 + i * 10))
    assert call("glob", pattern="*.txt").content.splitlines() == ["new.txt", "mid.txt", "old.txt"]


def test_glob_top_level_only_without_slash_with_hint(call, project: Path) -> None:
    write(project, "src/deep.py")
    out = call("glob", pattern="*.py")
    assert "No files match" in out.content and "**/*.py" in out.content
    assert call("glob", pattern="./src/*.py").content == "src/deep.py"
    assert call("glob", pattern="src/").content == "src/deep.py"
    assert call("glob", pattern=str(project / "src" / "*.py")).content == "src/deep.py"


def test_glob_explicit_start_inside_ignored_dir(call, project: Path) -> None:
    write(project, ".transcripts/outputs/bash-1.log")
    assert call("glob", pattern=".transcripts/outputs/*.log").content == ".transcripts/outputs/bash-1.log"


def test_glob_caps_results(call, project: Path) -> None:
    for i in range(230):
        write(project, f"many/f{i:03d}.txt")
    lines = call("glob", pattern="many/*.txt").content.splitlines()
    assert len(lines) == 201
    assert lines[-1] == "… 30 more (narrow the pattern)"


def test_glob_refuses_escapes(call, tmp_path: Path) -> None:
    for pattern in ["../*", "/etc/*", "src/../../*"]:
        out = call("glob", pattern=pattern)
        assert out.is_error and "escapes the project root" in out.content, pattern


# --- grep --------------------------------------------------------------------------------


def test_grep_output_format_and_ignores(call, project: Path) -> None:
    make_tree(project)
    write(project, "src/app.py", "import os\ndef handler():\n    return os.getcwd()\n")
    write(project, "build/gen.py", "def handler(): pass\n")
    write(project, "node_modules/pkg/index.py", "def handler(): pass\n")
    out = call("grep", pattern=r"def \w+\(")
    assert out.content == "src/app.py:2: def handler():"


def test_grep_path_and_glob_filters(call, project: Path) -> None:
    write(project, "a/x.py", "needle\n")
    write(project, "a/x.md", "needle\n")
    write(project, "b/y.py", "needle\n")
    assert call("grep", pattern="needle", glob="*.py").content.splitlines() == ["a/x.py:1: needle", "b/y.py:1: needle"]
    assert call("grep", pattern="needle", path="a").content.splitlines() == ["a/x.md:1: needle", "a/x.py:1: needle"]
    assert call("grep", pattern="needle", glob="b/**/*.py").content == "b/y.py:1: needle"
    assert call("grep", pattern="needle", path="a/x.md").content == "a/x.md:1: needle"


def test_grep_skips_binary_and_reports_no_matches(call, project: Path) -> None:
    (project / "blob.bin").write_bytes(b"needle\x00\x01\x02")
    write(project, "t.txt", "hay\n")
    out = call("grep", pattern="needle")
    assert not out.is_error
    assert (
        out.content
        == "No matches in the files searched for 'needle' in the project. Not searched: 1 binary file (blob.bin)."
    )
    single = call("grep", pattern="needle", path="blob.bin")
    assert single.is_error and "binary" in single.content


def test_grep_names_files_it_skipped_as_too_large(call, project: Path, monkeypatch) -> None:
    from memagent.tools import search

    monkeypatch.setattr(search, "GREP_MAX_FILE_BYTES", 1000)
    write(project, "big.log", "needle\n" * 500)
    write(project, "small.txt", "hay\n")
    out = call("grep", pattern="needle")
    assert out.content == (
        "No matches in the files searched for 'needle' in the project. "
        "Not searched: 1 file larger than 1000 bytes (big.log)."
    )
    write(project, "other.txt", "needle here\n")
    found = call("grep", pattern="needle").content.splitlines()
    assert found == ["other.txt:1: needle here", "[Not searched: 1 file larger than 1000 bytes (big.log).]"]
    assert call("grep", pattern="hay").content.endswith("(big.log).]")
    write(project, "clean/only.txt", "needle\n")
    assert call("grep", pattern="needle", path="clean").content == "clean/only.txt:1: needle"


def test_grep_invalid_regex_is_a_clear_error(call, project: Path) -> None:
    out = call("grep", pattern="foo(")
    assert out.is_error and "Invalid regex 'foo('" in out.content and "missing )" in out.content


def test_grep_caps_matches(call, project: Path) -> None:
    write(project, "big.txt", "hit\n" * 500)
    lines = call("grep", pattern="hit").content.splitlines()
    assert len(lines) == 201 and lines[199] == "big.txt:200: hit"
    assert lines[-1].startswith("[Stopped after 200 matches")


def test_grep_refuses_escape_and_missing_path(call, project: Path) -> None:
    assert "escapes the project root" in call("grep", pattern="x", path="..").content
    missing = call("grep", pattern="x", path="nope")
    assert missing.is_error and "Path not found" in missing.content
    wildcard = call("grep", pattern="x", path="src/*.py")
    assert wildcard.is_error and "as `glob`" in wildcard.content


def test_grep_does_not_leak_through_symlinks(call, project: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("password=hunter2\n")
    (project / "innocent.txt").symlink_to(tmp_path / "secret.txt")
    out = call("grep", pattern="password")
    assert "hunter2" not in out.content and out.content.startswith("No matches")
