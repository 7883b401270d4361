"""Search tools: glob and grep over the project.

* ``glob`` lists files only (not directories), newest modification time first (ties
  alphabetical), at most :data:`MAX_GLOB_RESULTS`. ``*`` does not cross ``/``; use ``**/``.
* ``grep`` searches top-down (each directory's files by name, then its subdirectories),
  skips binary files (a NUL byte in the first 8 KiB) and files over
  :data:`GREP_MAX_FILE_BYTES`, and stops after :data:`MAX_GREP_MATCHES` matches or
  ``ctx.output_cap_chars`` characters.
* Both skip the directories in :data:`memagent.tools.paths.IGNORED_DIR_NAMES` and the root
  ``.gitignore`` patterns, except below an explicitly given starting directory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from memagent.decoding import decode
from memagent.permissions.effects import Effect, declares
from memagent.tools import claude_names
from memagent.tools.base import ToolContext, ToolError, ToolInput, tool
from memagent.tools.fs import SNIFF_BYTES, human_size, looks_binary, optional_field, similar_names_hint
from memagent.tools.paths import (
    IgnoreRules,
    compile_glob,
    display_path,
    literal_prefix,
    project_root,
    resolve_path,
    shown_path,
    walk_base,
    walk_files,
)

MAX_GLOB_RESULTS = 200
MAX_GREP_MATCHES = 200
GREP_LINE_CHARS = 500
GREP_MAX_FILE_BYTES = 20 * 1024 * 1024


class GlobInput(ToolInput):
    pattern: str = Field(
        description="Glob pattern relative to the project root, e.g. '**/*.py', 'src/**/test_*.ts', "
        "'*.{md,txt}'. '*' does not cross directories; '**/' matches any depth."
    )


def _normalise_pattern(ctx: ToolContext, pattern: str) -> str:
    pattern = pattern.strip()
    if not pattern:
        raise ToolError("pattern is empty. Example: '**/*.py'.")
    if pattern.startswith("/") or pattern.startswith("~"):
        prefix = literal_prefix(pattern) or "/"
        base = resolve_path(ctx, prefix)  # refuses prefixes outside the root
        rel_base = display_path(ctx, base)
        rest = pattern[len(prefix) :].lstrip("/")
        pattern = rest if rel_base == "." else f"{rel_base}/{rest}"
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if pattern.endswith("/"):  # 'src/' means everything below src
        pattern += "**"
    if ".." in pattern.split("/"):
        raise ToolError(f"Path escapes the project root: {pattern} ('..' is not allowed in glob patterns).")
    return pattern


@tool(
    "glob",
    GlobInput,
    key_argument="pattern",
    effects=lambda inp: declares(Effect.READ, paths=(literal_prefix(inp.pattern.strip()) or ".",)),
    claude=claude_names.GLOB,
)
def glob(inp: GlobInput, ctx: ToolContext) -> str:
    """Find files by name pattern. Returns paths relative to the project root, newest first.

    Lists files only (not directories), at most 200. Skips .git, .memory, .transcripts, .tasks,
    node_modules, __pycache__, virtualenvs and the root .gitignore patterns (unless the pattern
    starts inside such a directory). Use grep to search file contents.
    """
    pattern = _normalise_pattern(ctx, inp.pattern)
    root = project_root(ctx)
    start = resolve_path(ctx, literal_prefix(pattern) or ".")
    base = walk_base(ctx, start)
    regex = compile_glob(pattern)
    found: list[tuple[float, str]] = []
    if start.is_dir():
        for path, rel in walk_files(base, start, IgnoreRules.for_root(base)):
            listed = shown_path(base, root, rel)
            if regex.match(listed):
                with suppress(OSError):
                    found.append((path.stat().st_mtime, listed))
    if not found:
        hint = ""
        if "/" not in pattern and "**" not in pattern:
            hint = f" Patterns without '/' only match the top directory; try '**/{pattern}'."
        return f"No files match {inp.pattern!r}.{hint}"
    found.sort(key=lambda item: (-item[0], item[1]))
    lines = [rel for _, rel in found[:MAX_GLOB_RESULTS]]
    body = _cap_lines(lines, ctx.output_cap_chars)
    shown = body.count("\n") + 1
    if shown < len(found):
        body += f"\n… {len(found) - shown} more (narrow the pattern)"
    return body


def _cap_lines(lines: list[str], cap: int) -> str:
    kept: list[str] = []
    used = 0
    for line in lines:
        if kept and used + len(line) + 1 > cap:
            break
        kept.append(line)
        used += len(line) + 1
    return "\n".join(kept)


# --- grep ------------------------------------------------------------------------------------


class GrepInput(ToolInput):
    pattern: str = Field(description="Python regular expression to search for, e.g. 'def \\w+_handler' or '(?i)todo'.")
    path: str | SkipJsonSchema[None] = optional_field(
        "File or directory to search, relative to the project root (default: the whole project)."
    )
    glob: str | SkipJsonSchema[None] = optional_field(
        "Only search files matching this glob, e.g. '*.py' (matched against the file name) "
        "or 'src/**/*.ts' (matched against the path from the project root)."
    )


def _normalise_file_glob(pattern: str | None) -> str | None:
    if pattern is None or not pattern.strip():
        return None
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return pattern


def _filter_accepts(file_filter: re.Pattern[str] | None, glob_pattern: str | None, rel: str) -> bool:
    """Like ripgrep's --glob: a pattern with '/' matches the path, otherwise the file name."""
    if file_filter is None or glob_pattern is None:
        return True
    subject = rel if "/" in glob_pattern else rel.rsplit("/", 1)[-1]
    return bool(file_filter.match(subject))


SKIP_LARGE, SKIP_BINARY, SKIP_UNREADABLE = "large", "binary", "unreadable"
SKIPPED_NAMES_SHOWN = 5


def _grep_text(path: Path) -> tuple[str | None, str]:
    """The file's text and "", or None and why it was skipped (large, binary, unreadable)."""
    try:
        if path.stat().st_size > GREP_MAX_FILE_BYTES:
            return None, SKIP_LARGE
        data = path.read_bytes()
    except OSError:
        return None, SKIP_UNREADABLE
    if looks_binary(data[:SNIFF_BYTES]):
        return None, SKIP_BINARY
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError:  # a legacy encoding (Latin-1, Shift-JIS, …): searched as it reads
        return decode(data).text, ""


def describe_skipped(skipped: dict[str, list[str]]) -> str:
    """``Not searched: 2 files larger than 20.0 MB (a.log, b.log), 1 binary file (x.bin).``"""
    labels = {
        SKIP_LARGE: f"larger than {human_size(GREP_MAX_FILE_BYTES)}",
        SKIP_BINARY: "binary",
        SKIP_UNREADABLE: "unreadable",
    }
    parts = []
    for reason in (SKIP_LARGE, SKIP_UNREADABLE, SKIP_BINARY):
        names = skipped.get(reason) or []
        if not names:
            continue
        shown = ", ".join(names[:SKIPPED_NAMES_SHOWN]) + (", …" if len(names) > SKIPPED_NAMES_SHOWN else "")
        noun = "file" if len(names) == 1 else "files"
        parts.append(
            f"{len(names)} {noun} {labels[reason]} ({shown})"
            if reason == SKIP_LARGE
            else f"{len(names)} {labels[reason]} {noun} ({shown})"
        )
    return "Not searched: " + ", ".join(parts) + "." if parts else ""


# Longer than 60 lines: walking, filtering, capping and reporting skipped files share counters.
@tool(
    "grep",
    GrepInput,
    key_argument="pattern",
    effects=lambda inp: declares(Effect.READ, paths=(inp.path or ".",)),
    claude=claude_names.GREP,
)
def grep(inp: GrepInput, ctx: ToolContext) -> str:
    """Search file contents with a Python regular expression; prints `file:line: text`.

    Searches the whole project (or `path`, a file or directory), optionally only files matching
    `glob`. Ignored directories (.git, node_modules, .venv, .memory, ...) are skipped; binary
    files and files over 20 MB are not searched and are named in the result. At most 200
    matches are shown. Use `(?i)` for case-insensitive search.
    """
    try:
        regex = re.compile(inp.pattern)
    except re.error as exc:
        raise ToolError(
            f"Invalid regex {inp.pattern!r}: {exc}. Patterns are Python regular expressions; "
            "escape literal characters such as ( [ { . * + ? with a backslash."
        ) from exc
    root = project_root(ctx)
    target = resolve_path(ctx, inp.path or ".")
    shown_target = display_path(ctx, target)
    if not target.exists():
        hint = similar_names_hint(target)
        if any(c in (inp.path or "") for c in "*?["):
            hint = ". `path` takes a file or directory; pass a wildcard pattern as `glob` instead."
        raise ToolError(f"Path not found: {shown_target}{hint}")
    glob_pattern = _normalise_file_glob(inp.glob)
    file_filter = compile_glob(glob_pattern) if glob_pattern else None
    files: Iterable[tuple[Path, str]]
    if target.is_file():
        if _grep_text(target)[0] is None:
            limit = human_size(GREP_MAX_FILE_BYTES)
            raise ToolError(f"{shown_target} is binary, unreadable or larger than {limit}; not searched.")
        files = [(target, shown_target)]
    else:
        base = walk_base(ctx, target)
        files = (
            (path, shown_path(base, root, rel))
            for path, rel in walk_files(base, target, IgnoreRules.for_root(base))
            if _filter_accepts(file_filter, glob_pattern, shown_path(base, root, rel))
        )

    results: list[str] = []
    skipped: dict[str, list[str]] = {}
    used = 0
    more = False
    for path, rel in files:
        text, reason = _grep_text(path)
        if text is None:
            skipped.setdefault(reason, []).append(rel)
            continue
        if not regex.search(text):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if not regex.search(line):
                continue
            if len(line) > GREP_LINE_CHARS:
                line = line[:GREP_LINE_CHARS] + "…"
            entry = f"{rel}:{number}: {line}"
            if len(results) >= MAX_GREP_MATCHES or (results and used + len(entry) + 1 > ctx.output_cap_chars):
                more = True
                break
            results.append(entry)
            used += len(entry) + 1
        if more:
            break

    not_searched = describe_skipped(skipped)
    if not results:
        where = "the project" if shown_target == "." else shown_target
        extra = f" (files matching {inp.glob!r})" if inp.glob else ""
        searched = "No matches" if not not_searched else "No matches in the files searched"
        return f"{searched} for {inp.pattern!r} in {where}{extra}." + (f" {not_searched}" if not_searched else "")
    body = "\n".join(results)
    if more:
        body += f"\n[Stopped after {len(results)} matches; there are more. Narrow the search with path= or glob=.]"
    elif not_searched:
        body += f"\n[{not_searched}]"
    return body
