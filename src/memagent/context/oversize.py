"""Text too large for the context: saved as an attachment file, sent as a preview.

A user message (a paste, a ``-p`` prompt, stdin, an ``@file``) or a tool output whose estimate
is above the inline limit (``Settings.inline_limit_tokens``) is not sent whole. Its full text is
saved, secrets redacted, as ``.transcripts/<session>/attachments/<kind>-<digest>.txt``; the model
gets its first and last lines with a note between them giving the size and the path, which it
pages through with ``read_file`` (``offset`` and ``limit``). The transcript keeps the message
whole (:meth:`memagent.context.conversation.Conversation.append` records ``whole``).

The same routine shrinks what is already in the conversation: when a resumed transcript holds a
message that never fit, and when the API still answers "prompt is too long" (then the limit is
lowered step by step, tool outputs go before the user's words, the largest first).

File names are the digest of the saved text, so shrinking the same text again reuses its file.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memagent.decoding import scrub
from memagent.fsutil import atomic_write, private_dir
from memagent.jsontypes import JsonValue
from memagent.llm.items import Injected, Item, Text, ToolResult, item
from memagent.llm.types import Block, Message
from memagent.redact import redact

_ONLY: dict[str, tuple[type[Item], ...]] = {"text": (Text, Injected), "tool_result": (ToolResult,)}
HEAD_CHARS = 2_400
TAIL_CHARS = 1_200
MIN_LIMIT_TOKENS = 2_000  # a preview is about 1,000 tokens: never shrink below twice that
READ_FILE_LINE_CHARS = 2_000  # read_file shows this much of one line
SAMPLE_CHARS = 256 * 1024  # a huge text is measured by its start first

TextCounter = Callable[[str], int]


@dataclass(frozen=True)
class Attached:
    """One text that went to an attachment file instead of the context."""

    kind: str  # "message" or "tool output"
    path: str  # as the model names it (relative to the project root)
    size: int  # UTF-8 bytes
    lines: int
    tokens: int

    def note(self) -> str:
        """One line for the user."""
        what = "Your message" if self.kind == "message" else "A tool output"
        return (
            f"{what} ({human_size(self.size)}, about {self.tokens:,} tokens) is too large to send whole: the model "
            f"gets its start and end and reads the rest from {self.path}"
        )


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def _cut_at_line(text: str, limit: int, *, from_end: bool) -> str:
    """At most ``limit`` characters of the start (or end) of ``text``, on a line boundary when
    one is near."""
    if len(text) <= limit:
        return text
    if from_end:
        piece = text[-limit:]
        newline = piece.find("\n")
        return piece[newline + 1 :] if 0 <= newline < limit // 5 else piece
    piece = text[:limit]
    newline = piece.rfind("\n")
    return piece[: newline + 1] if newline > limit * 4 // 5 else piece


def preview(text: str, attached: Attached) -> str:
    """The text the model gets instead of ``text``: its start, a note naming the file, its end."""
    head = _cut_at_line(text, HEAD_CHARS, from_end=False)
    tail = _cut_at_line(text[len(head) :], TAIL_CHARS, from_end=True)
    what = "This message" if attached.kind == "message" else "This tool output"
    long_lines = ""
    longest = max((len(line) for line in text.splitlines()), default=0)
    if longest > READ_FILE_LINE_CHARS:
        long_lines = (
            f" Some lines are long (up to {longest:,} characters; read_file shows {READ_FILE_LINE_CHARS:,} per "
            "line): bash `cut -c` or `fold` reads them whole."
        )
    note = (
        f"[… {what} is {human_size(attached.size)} ({attached.lines:,} lines, about {attached.tokens:,} tokens), too "
        f"large to send whole. It is saved in full at {attached.path}: read it with read_file (path "
        f'"{attached.path}"; offset and limit page through its {attached.lines:,} lines).{long_lines} Above: its '
        f"first {head.count(chr(10)) or 1} lines; below: its last {tail.count(chr(10)) + 1} lines. …]"
    )
    return f"{head.rstrip(chr(10))}\n\n{note}\n\n{tail.lstrip(chr(10))}"


class AttachmentShelf:
    """Saves oversized texts of one session and builds their previews.

    ``directory``: where files go (``.transcripts/<session>/attachments``); ``shown_as``: how the
    model names that folder (relative to the project root); ``limit_tokens``: the inline limit;
    ``count``: the text counter of the session's token estimates.
    """

    def __init__(self, directory: Path, shown_as: str, limit_tokens: int, count: TextCounter) -> None:
        self.directory = directory
        self.shown_as = shown_as.rstrip("/")
        self.limit_tokens = max(MIN_LIMIT_TOKENS, limit_tokens)
        self.count = count

    def too_big(self, text: str, limit: int) -> int:
        """The token estimate of ``text`` when it is above ``limit``, else 0. Cheap for small text
        (a token is never fewer than one UTF-8 byte) and for huge text: when a start of it is
        already above the limit, the whole is, and its size is extrapolated from that start."""
        if len(text) * 4 <= limit or len(text.encode("utf-8", "surrogatepass")) <= limit:
            return 0
        if len(text) > 2 * SAMPLE_CHARS:
            start = self.count(text[:SAMPLE_CHARS])
            if start > limit:
                return start * len(text) // SAMPLE_CHARS
        tokens = self.count(text)
        return tokens if tokens > limit else 0

    def save(self, text: str, kind: str, tokens: int) -> Attached:
        """Write ``text`` (redacted, 0600) to the shelf; the same text always gets the same file,
        hard-linked from another session's shelf when one holds it (a resumed session)."""
        body = redact(scrub(text))
        data = body.encode("utf-8")
        name = f"{kind.replace(' ', '-')}-{hashlib.sha256(data).hexdigest()[:12]}.txt"
        target = self.directory / name
        if not target.exists():
            private_dir(self.directory)
            if not self._link_existing(name, target):
                atomic_write(target, data, keep_mode=False)
        lines = body.count("\n") + (0 if body.endswith("\n") else 1)
        return Attached(kind, f"{self.shown_as}/{name}", len(data), lines, tokens)

    def _link_existing(self, name: str, target: Path) -> bool:
        """Hard-link the same file from another session's shelf (same name: same content)."""
        for other in self.directory.parent.parent.glob(f"*/{self.directory.name}/{name}"):
            try:
                os.link(other, target)
                return True
            except OSError:  # another file system, or links not allowed: write a copy
                return False
        return False

    def _fit_text(self, text: str, kind: str, limit: int, found: list[Attached]) -> str:
        tokens = self.too_big(text, limit)
        if not tokens:
            return text
        attached = self.save(text, kind, tokens)
        found.append(attached)
        return preview(text, attached)

    def fit_block(self, block: Block, limit: int, found: list[Attached]) -> Block:
        """``block`` with its text replaced by a preview when it is above ``limit`` tokens."""
        value = item(block)
        if isinstance(value, (Text, Injected)):
            text = value.text
            fitted = self._fit_text(text, "message", limit, found)
            return block if fitted is text else {**block, "text": fitted}
        if not isinstance(value, ToolResult):
            return block
        content = block.get("content")
        if isinstance(content, str):
            fitted = self._fit_text(content, "tool output", limit, found)
            return block if fitted is content else {**block, "content": fitted}
        if isinstance(content, list):
            parts = [self._fit_item(part, limit, found) for part in content]
            changed = any(new is not old for new, old in zip(parts, content))
            return {**block, "content": parts} if changed else block
        return block

    def _fit_item(self, part: JsonValue, limit: int, found: list[Attached]) -> JsonValue:
        if not isinstance(part, dict):
            return part
        value = item(part)
        if not isinstance(value, Text):
            return part
        fitted = self._fit_text(value.text, "tool output", limit, found)
        return part if fitted is value.text else {**part, "text": fitted}

    def fit(self, blocks: Sequence[Block], limit: int | None = None) -> tuple[list[Block], list[Attached]]:
        """The blocks of one message with every text above the limit sent as a preview."""
        found: list[Attached] = []
        fitted = [self.fit_block(block, limit or self.limit_tokens, found) for block in blocks]
        return fitted, found

    def fit_messages(
        self, messages: Sequence[Message], limit: int | None = None, *, only: str | None = None
    ) -> tuple[list[Message], list[Attached]]:
        """Every user message fitted (``only``: just "tool_result" or just "text" blocks);
        unchanged messages are shared, not copied."""
        found: list[Attached] = []
        out: list[Message] = []
        for message in messages:
            if message.get("role") != "user":
                out.append(message)
                continue
            content = message.get("content") or []
            kinds = _ONLY.get(only) if only is not None else None
            blocks = [
                block
                if kinds is not None and not isinstance(item(block), kinds)
                else self.fit_block(block, limit or self.limit_tokens, found)
                for block in content
            ]
            changed = any(new is not old for new, old in zip(blocks, content))
            out.append({**message, "content": blocks} if changed else message)
        return out, found


__all__ = ["Attached", "AttachmentShelf", "MIN_LIMIT_TOKENS", "SAMPLE_CHARS", "human_size", "preview"]
