"""File tools: read_file, write_file, edit_file, glob, grep.

Every path goes through :func:`memagent.tools.paths.resolve_path`, so nothing outside the
project root can be read or written (``read_file`` may also read the capped-output directory
when that was configured outside the project). Writes are atomic: a temp file in the same
directory, flushed and fsynced, then ``os.replace``; an existing file keeps its permissions and a
write through a symlink updates the symlink's target.

Choices worth knowing:

* ``glob`` lists files only (not directories), newest modification time first (ties
  alphabetical), at most :data:`MAX_GLOB_RESULTS`. ``*`` does not cross ``/``; use ``**/``.
* ``grep`` searches top-down (each directory's files by name, then its subdirectories),
  skips binary files (a NUL byte in the first 8 KiB) and files over
  :data:`GREP_MAX_FILE_BYTES`, and stops after :data:`MAX_GREP_MATCHES` matches or
  ``ctx.output_cap_chars`` characters.
* Text files may be in any encoding: a file that is not plain UTF-8 (Latin-1, Windows-1252,
  Shift-JIS, UTF-16 with a byte-order mark, …) is decoded by :mod:`memagent.tools.textfiles`, and
  ``edit_file`` / ``write_file`` write it back in the same encoding, with the same byte-order mark
  and line endings. A file is binary, and refused, when its first 8 KiB hold a NUL byte (without a
  UTF-16/32 mark) or it is text in no recognisable encoding.
* Both skip the directories in :data:`memagent.tools.paths.IGNORED_DIR_NAMES` and the root
  ``.gitignore`` patterns, except below an explicitly given starting directory.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationInfo, field_validator
from pydantic.json_schema import SkipJsonSchema

from memagent.decoding import decode
from memagent.decoding import looks_binary as _looks_binary
from memagent.fsutil import atomic_write
from memagent.permissions.effects import Effect, declares
from memagent.tools import claude_names
from memagent.tools.base import Tool, ToolContext, ToolError, ToolInput, tool
from memagent.tools.paths import (
    IgnoreRules,
    compile_glob,
    display_path,
    literal_prefix,
    outputs_dir,
    project_root,
    resolve_path,
    shown_path,
    walk_base,
    walk_files,
)
from memagent.tools.textfiles import (
    TextFile,
    binary_error,
    count_remaining_lines,
    decode_file,
    encode_like,
    format_line,
    legacy_text,
    page,
    read_decoded,
    read_line,
)

DEFAULT_READ_LIMIT = 2000
SNIFF_BYTES = 8192
MAX_GLOB_RESULTS = 200
MAX_GREP_MATCHES = 200
GREP_LINE_CHARS = 500
GREP_MAX_FILE_BYTES = 20 * 1024 * 1024
EDIT_HINT_MAX_LINES = 20_000


# --- shared helpers --------------------------------------------------------------------------


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"


def looks_binary(head: bytes) -> bool:
    """A NUL byte without a UTF-16/32 mark, or many control characters (:mod:`memagent.decoding`)."""
    return _looks_binary(head)


def _lines(n: int) -> str:
    return f"{n} line" if n == 1 else f"{n} lines"


def count_lines(text: str) -> int:
    """Lines as an editor counts them: a trailing newline does not start a new line."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _require_file(path: Path, shown: str) -> None:
    if not path.exists():
        raise ToolError(f"File not found: {shown}{_similar_names_hint(path)}")
    if path.is_dir():
        raise ToolError(f"{shown} is a directory, not a file. Use glob (e.g. '{shown}/*') to list it.")
    if not path.is_file():
        raise ToolError(f"{shown} is not a regular file.")


def _similar_names_hint(path: Path) -> str:
    parent = path.parent
    if not parent.is_dir():
        return " (its directory does not exist either)."
    with suppress(OSError):
        names = [entry.name for entry in os.scandir(parent)]
        close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
        if close:
            return ". Similar names in that directory: " + ", ".join(close)
    return ""


def optional_field(description: str, **schema_extra: Any) -> Any:
    """An optional input field: absent or ``null`` means "use the default".

    The schema shows the plain type (no ``anyOf`` with null, no ``default: null``) plus
    ``schema_extra`` (e.g. ``minimum``); range checks live in validators so errors are one line.
    """

    def adjust(schema: dict[str, Any]) -> None:
        schema.pop("default", None)
        schema.update(schema_extra)

    return Field(default=None, description=description, json_schema_extra=adjust)


def _positive_or_none(value: int | None, name: str) -> int | None:
    """Range check done by hand so the error is one clear line and ``null`` means "default"."""
    if value is not None and value < 1:
        raise ValueError(f"{name} must be 1 or more")
    return value


# --- read_file -------------------------------------------------------------------------------


class ReadFileInput(ToolInput):
    path: str = Field(description="File to read, relative to the project root (or absolute inside it).")
    offset: int | SkipJsonSchema[None] = optional_field(
        "1-based line number to start reading from (default 1).", minimum=1
    )
    limit: int | SkipJsonSchema[None] = optional_field(
        f"Maximum number of lines to return (default {DEFAULT_READ_LIMIT}).", minimum=1
    )

    @field_validator("offset", "limit")
    @classmethod
    def _at_least_one(cls, value: int | None, info: ValidationInfo) -> int | None:
        return _positive_or_none(value, info.field_name or "value")


@tool(
    "read_file",
    ReadFileInput,
    key_argument="path",
    effects=lambda inp: declares(Effect.READ, paths=(inp.path,)),
    claude=claude_names.READ,
)
def read_file(inp: ReadFileInput, ctx: ToolContext) -> str:
    """Read a text file from the project, with line numbers (like `cat -n`).

    Returns up to `limit` lines (default 2000) starting at line `offset` (1-based). Lines longer
    than 2000 characters are truncated. Long outputs end with a note telling you the `offset`
    to continue from. Binary files are refused. Use this instead of `cat`/`head` in bash.
    """
    path = resolve_path(ctx, inp.path, extra_roots=(outputs_dir(ctx),))
    shown = display_path(ctx, path)
    _require_file(path, shown)
    size = path.stat().st_size
    offset = inp.offset or 1
    limit = inp.limit or DEFAULT_READ_LIMIT
    cap = max(ctx.output_cap_chars, 1)

    with path.open("rb") as fh:
        if looks_binary(fh.read(SNIFF_BYTES)):
            raise binary_error(shown, human_size(size), "read_file")
    legacy = legacy_text(path, size, shown, human_size(size))
    if legacy is not None:
        return read_decoded(legacy, shown, offset, limit, cap)
    with path.open("rb") as fh:
        shown_lines: list[str] = []
        used_chars = 0
        line_no = 0  # lines consumed from the file so far
        capped = False
        while True:
            raw, dropped = read_line(fh)
            if not raw:
                break
            line_no += 1
            if line_no < offset:
                continue
            formatted = format_line(line_no, raw, dropped)
            if used_chars + len(formatted) + 1 > cap and shown_lines:
                capped = True
                break
            shown_lines.append(formatted)
            used_chars += len(formatted) + 1
            if len(shown_lines) >= limit:
                break
        total = line_no + count_remaining_lines(fh)
    return page(shown, shown_lines, total, offset, limit, cap, capped)


# --- write_file ------------------------------------------------------------------------------


class WriteFileInput(ToolInput):
    path: str = Field(description="File to write, relative to the project root. Parent directories are created.")
    content: str = Field(description="The complete new content of the file.")


@tool(
    "write_file",
    WriteFileInput,
    key_argument="path",
    effects=lambda inp: declares(Effect.WRITE, paths=(inp.path,)),
    claude=claude_names.WRITE,
)
def write_file(inp: WriteFileInput, ctx: ToolContext) -> str:
    """Create a file or replace its whole content. Parent directories are created as needed.

    Prefer edit_file for changing part of an existing file: it is safer and cheaper. Read an
    existing file before overwriting it.
    """
    path = resolve_path(ctx, inp.path)
    shown = display_path(ctx, path)
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; give a file path.")
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise ToolError(f"Cannot create the directory for {shown}: a parent is a file ({exc}).") from exc
    data, kept = encode_like(_existing_text(path, shown) if existed else None, inp.content, shown)
    atomic_write(path, data)
    lines = count_lines(inp.content)
    how = "overwrote the existing file" if existed else "new file"
    how += f"; kept its {kept}" if kept else ""
    return f"Wrote {_lines(lines)} ({len(data)} bytes) to {shown} ({how})."


def _existing_text(path: Path, shown: str) -> TextFile | None:
    """How an existing file is stored, so an overwrite keeps it (None: binary or unreadable)."""
    try:
        data = path.read_bytes()
        return decode_file(data, shown, human_size(len(data)), "write_file")
    except (OSError, ToolError):
        return None


# --- edit_file -------------------------------------------------------------------------------


class EditFileInput(ToolInput):
    path: str = Field(description="File to edit, relative to the project root.")
    old_text: str = Field(
        description="Exact text to replace, including whitespace and indentation. It must occur "
        "exactly once in the file; include surrounding lines to make it unique."
    )
    new_text: str = Field(description="The replacement text.")


def _read_text_for_edit(path: Path, shown: str) -> TextFile:
    _require_file(path, shown)
    data = path.read_bytes()
    return decode_file(data, shown, human_size(len(data)), "edit_file")


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _occurrence_lines(text: str, needle: str, limit: int = 10) -> list[int]:
    lines, start = [], 0
    while len(lines) < limit:
        found = text.find(needle, start)
        if found == -1:
            break
        lines.append(_line_of(text, found))
        start = found + max(len(needle), 1)
    return lines


def _squash_whitespace(text: str) -> str:
    return " ".join(text.split())


def _not_found_hint(content: str, old_text: str) -> str:
    if _squash_whitespace(old_text) and _squash_whitespace(old_text) in _squash_whitespace(content):
        return (
            " It does match if whitespace is ignored: check indentation (tabs vs spaces), "
            "trailing spaces and line breaks. Re-read the file and copy the text exactly."
        )
    first = next((line.strip() for line in old_text.splitlines() if line.strip()), "")
    lines = content.splitlines()
    if not first or len(lines) > EDIT_HINT_MAX_LINES:
        return " Re-read the file and copy the text exactly."
    stripped = [line.strip() for line in lines]
    close = difflib.get_close_matches(first, stripped, n=3, cutoff=0.6)
    if not close:
        return " No similar line found; re-read the file (it may have changed)."
    shown = []
    for candidate in close:
        number = stripped.index(candidate) + 1
        shown.append(f"{number:>6}\t{lines[number - 1][:200]}")
    return " Closest lines to the start of old_text:\n" + "\n".join(shown)


@tool(
    "edit_file",
    EditFileInput,
    key_argument="path",
    effects=lambda inp: declares(Effect.WRITE, paths=(inp.path,)),
    claude=claude_names.EDIT,
)
def edit_file(inp: EditFileInput, ctx: ToolContext) -> str:
    """Replace one exact occurrence of `old_text` with `new_text` in a file.

    `old_text` must match the file exactly (whitespace included) and occur exactly once; add
    surrounding lines if it is not unique. Read the file first. To create a file use write_file.
    """
    if inp.old_text == "":
        raise ToolError("old_text is empty. Give the exact text to replace (use write_file to create a file).")
    if inp.old_text == inp.new_text:
        raise ToolError("old_text and new_text are identical; nothing to change.")
    path = resolve_path(ctx, inp.path)
    shown = display_path(ctx, path)
    file = _read_text_for_edit(path, shown)
    content = file.text
    old_text, new_text = inp.old_text, inp.new_text
    if old_text not in content and "\r\n" in content and "\r\n" not in old_text and "\n" in old_text:
        old_text = old_text.replace("\n", "\r\n")  # the file uses CRLF line endings
        new_text = new_text.replace("\r\n", "\n").replace("\n", "\r\n")
    count = content.count(old_text)
    if count == 0:
        raise ToolError(f"old_text was not found in {shown}." + _not_found_hint(content, old_text))
    if count > 1:
        where = ", ".join(str(n) for n in _occurrence_lines(content, old_text))
        raise ToolError(
            f"old_text occurs {count} times in {shown} (at lines {where}). "
            "Include more surrounding context so it matches exactly once."
        )
    index = content.index(old_text)
    updated = content[:index] + new_text + content[index + len(old_text) :]
    data, _ = encode_like(file, updated, shown)
    atomic_write(path, data)
    line = _line_of(content, index)
    old_n, new_n = count_lines(old_text) or 1, count_lines(new_text)
    return f"Edited {shown} at line {line}: replaced {_lines(old_n)} with {_lines(new_n)}."


# --- glob ------------------------------------------------------------------------------------


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
        hint = _similar_names_hint(target)
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


def file_tools() -> list[Tool]:
    return [read_file, write_file, edit_file, glob, grep]
