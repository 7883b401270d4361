"""File tools: read_file, write_file, edit_file (glob and grep: :mod:`memagent.tools.search`).

Every path goes through :func:`memagent.tools.paths.resolve_path`, so nothing outside the
project root can be read or written (``read_file`` may also read the capped-output directory
when that was configured outside the project). Writes are atomic: a temp file in the same
directory, flushed and fsynced, then ``os.replace``; an existing file keeps its permissions and a
write through a symlink updates the symlink's target.

Choices worth knowing:

* Text files may be in any encoding: a file that is not plain UTF-8 (Latin-1, Windows-1252,
  Shift-JIS, UTF-16 with a byte-order mark, …) is decoded by :mod:`memagent.tools.textfiles`, and
  ``edit_file`` / ``write_file`` write it back in the same encoding, with the same byte-order mark
  and line endings. A file is binary, and refused, when its first 8 KiB hold a NUL byte (without a
  UTF-16/32 mark) or it is text in no recognisable encoding.
"""

from __future__ import annotations

import difflib
import os
from contextlib import suppress
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationInfo, field_validator
from pydantic.json_schema import SkipJsonSchema

from memagent.decoding import looks_binary as _looks_binary
from memagent.fsutil import atomic_write
from memagent.jsontypes import JsonObject, JsonValue
from memagent.permissions.effects import Effect, declares
from memagent.tools import claude_names
from memagent.tools.base import ToolContext, ToolError, ToolInput, tool
from memagent.tools.paths import (
    display_path,
    outputs_dir,
    resolve_path,
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
        raise ToolError(f"File not found: {shown}{similar_names_hint(path)}")
    if path.is_dir():
        raise ToolError(f"{shown} is a directory, not a file. Use glob (e.g. '{shown}/*') to list it.")
    if not path.is_file():
        raise ToolError(f"{shown} is not a regular file.")


def similar_names_hint(path: Path) -> str:
    parent = path.parent
    if not parent.is_dir():
        return " (its directory does not exist either)."
    with suppress(OSError):
        names = [entry.name for entry in os.scandir(parent)]
        close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
        if close:
            return ". Similar names in that directory: " + ", ".join(close)
    return ""


def optional_field(description: str, **schema_extra: JsonValue) -> Any:
    """An optional input field: absent or ``null`` means "use the default". Returns what pydantic's
    ``Field`` returns, declared the same way, so it stands as the default of any field type.

    The schema shows the plain type (no ``anyOf`` with null, no ``default: null``) plus
    ``schema_extra`` (e.g. ``minimum``); range checks live in validators so errors are one line.
    """

    def adjust(schema: JsonObject) -> None:
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
    lines: list[int] = []
    start = 0
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
