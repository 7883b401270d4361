"""Context the user attaches to a message in the REPL: ``@path`` mentions and ``!command`` output.

``@path`` (at the start or after whitespace; ``@"a path with spaces"`` also works) attaches the
file's text to the message, when the path names a file inside the project (resolved like
``read_file``: no ``..`` or symlink escape). A directory attaches its listing. Each attachment
is capped at :data:`MAX_ATTACHMENT_CHARS`; a longer file attaches its start and end with a note
telling the model to page through the rest with ``read_file`` (at most
:data:`MAX_MENTION_READ_BYTES` are read, so a huge file never stalls the prompt). Only regular
files attach: a named pipe or a device is refused in one line (reading one could block forever).
Tokens that name nothing are left alone (``@user`` in prose stays prose).

``!command`` runs a shell command in the project root at once (with the environment's secrets
removed, as for the ``bash`` tool), shows its output, and keeps it to attach to the next message,
so the model sees what the user saw.

The attachments go after the user's own text, each in an ``<attachment>`` block naming its
source, so the transcript shows exactly what the model was given.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from memagent.decoding import decode, looks_binary

MAX_ATTACHMENT_CHARS = 50_000
MAX_MENTION_READ_BYTES = 4 * 1024 * 1024  # of one @file; the model reads past it with read_file
MAX_LISTING_ENTRIES = 200
_MENTION = re.compile(r'(?:(?<=\s)|^)@(?:"([^"]+)"|([^\s"]+))')
_TRAILING = ".,;:!?)]}'"


@dataclass(frozen=True)
class Attachment:
    source: str  # "file src/app.py" or "command `ls -la` (exit 0)"
    text: str

    def render(self) -> str:
        source = self.source.replace('"', "'")
        return f'<attachment source="{source}">\n{self.text}\n</attachment>'


def compose_message(text: str, attachments: list[Attachment]) -> str:
    """The user's text followed by its attachments (unchanged when there are none)."""
    if not attachments:
        return text
    return "\n\n".join([text, *(a.render() for a in attachments)])


def cap(text: str, limit: int = MAX_ATTACHMENT_CHARS, *, rest: str = "") -> str:
    """Head and tail of a long text with a note of how much was left out (``rest``: where the
    whole text can be read)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {len(text) - limit:,} characters left out{rest} …]\n{text[-half:]}"


def _read_mention(path: Path, label: str) -> tuple[str | None, str]:
    """(the text to attach, or None; the note for the user) for one mentioned file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a named pipe must not block the open
    except OSError as exc:
        return None, f"@{label}: cannot be read ({exc.strerror or exc})"
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, f"@{label}: not a regular file (not attached)"
        try:
            data = fh.read(MAX_MENTION_READ_BYTES)
        except OSError as exc:
            return None, f"@{label}: cannot be read ({exc.strerror or exc})"
    if looks_binary(data[:8192]):
        return None, f"@{label}: a binary file (not attached)"
    text = decode(data).text  # a Latin-1 or UTF-16 file reads as the text it is
    if len(text) <= MAX_ATTACHMENT_CHARS and len(data) == info.st_size:
        return text, f"attached {label}"
    read = "" if len(data) == info.st_size else f"; only its first {len(data):,} bytes were read here"
    rest = f"{read}; read_file pages through the whole file {label} ({info.st_size:,} bytes) with offset and limit"
    return cap(text, rest=rest), f"attached {label} (start and end only: {info.st_size:,} bytes)"


def _inside(root: Path, raw: str) -> Path | None:
    root = root.resolve()
    candidate = Path(raw).expanduser()
    candidate = candidate if candidate.is_absolute() else root / candidate
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError):
        return None
    if resolved != root and root not in resolved.parents:
        return None
    return resolved if resolved.exists() else None


def mentioned_paths(text: str) -> list[str]:
    """The raw ``@path`` tokens of a message, in order, without duplicates."""
    found: list[str] = []
    for match in _MENTION.finditer(text):
        token = match.group(1) or match.group(2).rstrip(_TRAILING)
        if token and token not in found:
            found.append(token)
    return found


def attach_mentions(text: str, root: Path) -> tuple[list[Attachment], list[str]]:
    """(attachments for the files and directories mentioned, notes for the user)."""
    attachments: list[Attachment] = []
    notes: list[str] = []
    for token in mentioned_paths(text):
        path = _inside(root, token)
        if path is None:
            if "/" in token or "." in token:
                notes.append(f"@{token}: no such file in the project (not attached)")
            continue
        label = path.relative_to(root.resolve()).as_posix() or "."
        if path.is_dir():
            entries = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
            more = f"\n(and {len(entries) - MAX_LISTING_ENTRIES} more)" if len(entries) > MAX_LISTING_ENTRIES else ""
            attachments.append(Attachment(f"directory {label}", "\n".join(entries[:MAX_LISTING_ENTRIES]) + more))
            continue
        text, note = _read_mention(path, label)
        notes.append(note)
        if text is not None:
            attachments.append(Attachment(f"file {label}", text))
    return attachments, notes


def _output_ends(sink: IO[bytes], budget: int = MAX_ATTACHMENT_CHARS) -> str:
    """What a command wrote to ``sink``: whole when short, else its start and end with a note
    of how many bytes were left out (never more than ``budget`` bytes read into memory)."""
    size = os.fstat(sink.fileno()).st_size
    if size <= budget:
        return os.pread(sink.fileno(), size, 0).decode("utf-8", "replace")
    half = budget // 2
    head = os.pread(sink.fileno(), half, 0).decode("utf-8", "replace")
    tail = os.pread(sink.fileno(), half, size - half).decode("utf-8", "replace")
    return f"{head}\n[… {size - 2 * half:,} bytes left out …]\n{tail}"


def run_shell_escape(
    command: str, root: Path, timeout: float = 120.0, env: Mapping[str, str] | None = None
) -> Attachment:
    """Run ``command`` with the shell in ``root``; its output (stdout and stderr) as an attachment.

    The environment is ``env`` (default: this process's) without secrets, as for the ``bash``
    tool: the output goes to the model and into the transcript. The output streams to a
    temporary file, so a command that prints without end costs no memory; Ctrl-C or the timeout
    kills it and everything it started."""
    from memagent.childenv import filtered_environment
    from memagent.tools.executor import Command, LocalExecutor

    environment = filtered_environment(os.environ if env is None else env)
    with tempfile.TemporaryFile() as sink:
        done = LocalExecutor().run(Command(root, environment, timeout, script=command), sink)
        output = _output_ends(sink).rstrip("\n")
    if done.timed_out:
        return Attachment(f"command `{command}` (timed out after {timeout:g} s)", output or "(no output)")
    return Attachment(f"command `{command}` (exit {done.code})", output or "(no output)")


__all__ = ["Attachment", "attach_mentions", "cap", "compose_message", "mentioned_paths", "run_shell_escape"]
