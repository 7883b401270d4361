"""Text files as the file tools see them: decoded by one policy, written back the same way.

A file is read in whatever encoding it is in (:mod:`memagent.decoding`: a byte-order mark,
UTF-8, a coding declaration, Windows-1252/Latin-1 for Western text, charset-normalizer for the
rest), and :func:`encode_like` writes new text back in that encoding, with the same byte-order
mark and the same line endings (CRLF stays CRLF). Binary data (NUL bytes without a UTF-16/32
mark, text in no recognisable encoding) is refused with a clear message.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from memagent.decoding import Decoded, decode, looks_binary
from memagent.tools.base import ToolError

SNIFF_BYTES = 8192
MARKS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")  # byte-order marks (UTF-32's start like UTF-16's)
MAX_LINE_CHARS = 2000
LINE_READ_BYTES = 64 * 1024
WHOLE_FILE_BYTES = 16 * 1024 * 1024  # above this a UTF-8-looking file is streamed, not decoded whole


@dataclass(frozen=True)
class TextFile:
    """A file's text and how it was stored."""

    text: str
    decoded: Decoded
    newline: str  # "\r\n" when every line ends so, else "\n"

    @property
    def plain(self) -> bool:
        """UTF-8 without a byte-order mark and with LF line endings: nothing to keep."""
        return self.decoded.is_utf8 and not self.decoded.bom and self.newline == "\n"

    def describe(self) -> str:
        """``windows-1252, CRLF line endings``: what a write keeps."""
        parts = [] if self.decoded.is_utf8 and not self.decoded.bom else [self.decoded.label]
        if self.newline == "\r\n":
            parts.append("CRLF line endings")
        return ", ".join(parts)


def newline_of(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf == text.count("\n") else "\n"


def binary_error(shown: str, size: str, action: str) -> ToolError:
    return ToolError(
        f"{shown} is a binary file ({size}); {action} only handles text. "
        f"Inspect it with bash instead (e.g. `file {shown}` or `xxd {shown} | head`)."
    )


def decode_file(data: bytes, shown: str, size: str, action: str) -> TextFile:
    """The file's text (ToolError for binary data)."""
    if looks_binary(data[:SNIFF_BYTES]):
        raise binary_error(shown, size, action)
    decoded = decode(data)
    if decoded.replaced:
        raise ToolError(
            f"{shown} ({size}) is not text in any encoding memagent recognises; {action} only handles "
            f"text. Inspect it with bash instead (e.g. `file {shown}`)."
        )
    return TextFile(decoded.text, decoded, newline_of(decoded.text))


def legacy_text(path: Path, size: int, shown: str, size_text: str) -> TextFile | None:
    """The decoded file when it is not plain UTF-8 (it has a byte-order mark, or another encoding);
    None when it is UTF-8, or too large to decode whole (``read_file`` then streams it)."""
    if size > WHOLE_FILE_BYTES:
        return None
    data = path.read_bytes()
    if not data.startswith(MARKS):
        try:
            data.decode("utf-8")
            return None
        except UnicodeDecodeError:
            pass
    return decode_file(data, shown, size_text, "read_file")


def encode_like(old: TextFile | None, text: str, shown: str) -> tuple[bytes, str]:
    """``text`` as bytes for a file that was ``old`` (None: a new file, UTF-8), and a note of
    what was kept. ToolError when the file's encoding cannot hold a character of ``text``."""
    if old is None or old.plain:
        return text.encode("utf-8"), ""
    if old.newline == "\r\n" and "\n" in text.replace("\r\n", ""):
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    try:
        return old.decoded.encode(text), old.describe()
    except UnicodeEncodeError as exc:
        bad = text[exc.start : exc.end]
        line = text.count("\n", 0, exc.start) + 1
        raise ToolError(
            f"{shown} is stored as {old.decoded.label}, which cannot hold {bad!r} (line {line} of the new text). "
            f"Use characters that encoding has, or convert the file on purpose (e.g. with iconv in bash)."
        ) from exc


# --- reading in pages (read_file) -------------------------------------------------------------


def read_line(fh: BinaryIO) -> tuple[bytes, int]:
    """The next line, keeping at most :data:`LINE_READ_BYTES` of it, and how many bytes were
    dropped, so a huge single-line file (minified JS, a log without newlines) costs no memory."""
    line = fh.readline(LINE_READ_BYTES)
    if len(line) < LINE_READ_BYTES or line.endswith(b"\n"):
        return line, 0
    dropped = 0
    while True:
        more = fh.readline(LINE_READ_BYTES)
        dropped += len(more.rstrip(b"\n"))
        if not more or more.endswith(b"\n"):
            return line, dropped


def format_line(number: int, raw: bytes, dropped: int = 0) -> str:
    text = raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8", errors="replace")
    if len(text) > MAX_LINE_CHARS or dropped:
        more = len(text) - MAX_LINE_CHARS + dropped
        text = text[:MAX_LINE_CHARS] + f"… [line truncated, {more} more chars]"
    return f"{number:>6}\t{text}"


def count_remaining_lines(fh: BinaryIO) -> int:
    """Lines left in ``fh`` after the current position (a final line without ``\\n`` counts)."""
    count = 0
    tail = b""
    for chunk in iter(lambda: fh.read(1 << 20), b""):
        count += chunk.count(b"\n")
        tail = chunk[-1:]
    return count + (1 if tail and tail != b"\n" else 0)


def read_decoded(file: TextFile, shown: str, offset: int, limit: int, cap: int) -> str:
    """``read_file`` of a file decoded whole (not plain UTF-8): the same page, and its encoding."""
    lines = file.text.split("\n")
    if lines[-1] == "":
        lines.pop()  # a final newline ends the last line, it does not start one
    if not lines:
        return f"{shown} is empty (0 lines)."
    shown_lines: list[str] = []
    used_chars = 0
    capped = False
    for number in range(offset, min(len(lines), offset + limit - 1) + 1):
        formatted = format_line(number, lines[number - 1].encode("utf-8"))
        if used_chars + len(formatted) + 1 > cap and shown_lines:
            capped = True
            break
        shown_lines.append(formatted)
        used_chars += len(formatted) + 1
    body = page(shown, shown_lines, len(lines), offset, limit, cap, capped)
    return f"{body}\n\n[{shown} is stored as {file.describe()}; edit_file and write_file keep that.]"


def page(shown: str, shown_lines: list[str], total: int, offset: int, limit: int, cap: int, capped: bool) -> str:
    if total == 0:
        return f"{shown} is empty (0 bytes)."
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {shown}, which has {total} lines.")
    first, last_shown = offset, offset + len(shown_lines) - 1
    body = "\n".join(shown_lines)
    if last_shown < total:
        reason = f"output capped at {cap} characters" if capped else f"limit {limit}"
        body += (
            f"\n\n[Showing lines {first}-{last_shown} of {total} ({reason}). Use offset={last_shown + 1} to read more.]"
        )
    return body


__all__ = [
    "TextFile",
    "binary_error",
    "count_remaining_lines",
    "decode_file",
    "encode_like",
    "format_line",
    "legacy_text",
    "newline_of",
    "page",
    "read_decoded",
    "read_line",
]
