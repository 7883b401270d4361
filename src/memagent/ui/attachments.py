"""Context the user attaches to a message in the REPL: ``@path`` mentions and ``!command`` output.

``@path`` (at the start or after whitespace; ``@"a path with spaces"`` also works) attaches the
file's text to the message, when the path names a file inside the project (resolved like
``read_file``: no ``..`` or symlink escape). A directory attaches its listing. Each attachment
is capped at :data:`MAX_ATTACHMENT_CHARS`. Tokens that name nothing are left alone (``@user``
in prose stays prose).

``!command`` runs a shell command in the project root at once (with the environment's secrets
removed, as for the ``bash`` tool), shows its output, and keeps it to attach to the next message,
so the model sees what the user saw.

The attachments go after the user's own text, each in an ``<attachment>`` block naming its
source, so the transcript shows exactly what the model was given.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

MAX_ATTACHMENT_CHARS = 50_000
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


def cap(text: str, limit: int = MAX_ATTACHMENT_CHARS) -> str:
    """Head and tail of a long text with a note of how much was left out."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {len(text) - limit:,} characters left out …]\n{text[-half:]}"


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
        try:
            data = path.read_bytes()
        except OSError as exc:
            notes.append(f"@{token}: cannot be read ({exc.strerror or exc})")
            continue
        if b"\x00" in data[:8192]:
            notes.append(f"@{token}: a binary file (not attached)")
            continue
        attachments.append(Attachment(f"file {label}", cap(data.decode("utf-8", errors="replace"))))
        notes.append(f"attached {label}")
    return attachments, notes


def run_shell_escape(command: str, root: Path, timeout: float = 120.0, env: Mapping[str, str] | None = None) -> Attachment:
    """Run ``command`` with the shell in ``root``; its output (stdout and stderr) as an attachment.

    The environment is ``env`` (default: this process's) without secrets, as for the ``bash``
    tool: the output goes to the model and into the transcript."""
    from memagent.childenv import filtered_environment

    try:
        done = subprocess.run(
            command, shell=True, cwd=root, capture_output=True, text=True, errors="replace", timeout=timeout,
            stdin=subprocess.DEVNULL, env=filtered_environment(os.environ if env is None else env),
        )
    except subprocess.TimeoutExpired as exc:
        partial = (exc.stdout or "") if isinstance(exc.stdout, str) else ""
        return Attachment(f"command `{command}` (timed out after {timeout:g} s)", cap(partial))
    output = (done.stdout or "") + (done.stderr or "")
    return Attachment(f"command `{command}` (exit {done.returncode})", cap(output.rstrip("\n")) or "(no output)")


__all__ = ["Attachment", "attach_mentions", "cap", "compose_message", "mentioned_paths", "run_shell_escape"]
