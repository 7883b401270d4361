"""The deterministic digest: the summary written by rule when the summary model fails.

It keeps what an agent most needs to carry on: the user's requests and the decisions and
constraints they stated, the files it touched, the commands it ran, the errors it saw (error
results and error-looking lines of any output), and the latest assistant note. The user's words
are told from injected text by their items (:class:`memagent.llm.items.Injected`), so a request such as
``[WIP] fix the bug`` is kept while summaries, re-injected state, memories and reminders are not.

The digest opens with one of :data:`memagent.markers.DIGEST_OPENERS`, which is how a later
digest recognises it: an earlier digest found in the dropped part is merged list by list (older
items first, then capped), so repeated fallbacks do not nest; an earlier model-written summary is
carried over verbatim (capped).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memagent.jsontypes import JsonMapping
from memagent.llm.items import Injected, Text, ToolResult, ToolUse, message_items
from memagent.llm.types import Message
from memagent.markers import DIGEST_OPENERS, SUMMARY_TAGS, Marker

DIGEST_SUMMARY_CHARS = 6_000
ITEM_CHARS = 300
LAST_NOTE_CHARS = 800
COMMAND_CHARS = 200
PATH_KEYS = ("path", "file_path", "file", "filename")
ERROR_LINE = re.compile(r"(\w+(Error|Exception)\b|\bFAILED\b|\bfatal:|\berror:|Traceback \(most recent)", re.IGNORECASE)
DECISION_WORDS = re.compile(
    r"\b(decision|decided|decide|we will|we'll|must|never|always|prefer|do not|don't|constraint|from now on)\b",
    re.IGNORECASE,
)

# (title, how many of the latest distinct items are kept), in the order they are written
REQUESTS, DECISIONS, FILES, COMMANDS, ERRORS = (
    "User requests",
    "Decisions and constraints stated by the user",
    "Files touched",
    "Commands run (latest)",
    "Errors seen (latest)",
)
DIGEST_SECTIONS = ((REQUESTS, 20), (DECISIONS, 30), (FILES, 50), (COMMANDS, 10), (ERRORS, 20))


@dataclass
class _Digest:
    lists: dict[str, list[str]] = field(default_factory=lambda: {title: [] for title, _ in DIGEST_SECTIONS})
    earlier: list[str] = field(default_factory=list)
    last_note: str = ""

    def add(self, message: Message) -> None:
        for part in message_items(message):
            if isinstance(part, (Text, Injected)) and message.get("role") == "user":
                self._user_text(part)
            elif isinstance(part, (Text, Injected)):
                self.last_note = part.text
            elif isinstance(part, ToolUse):
                self._call(dict(part.input))
            elif isinstance(part, ToolResult):
                self._errors(part)

    def _user_text(self, part: Text | Injected) -> None:
        text = part.text
        if isinstance(part, Injected) and part.kind is Marker.SUMMARY:
            body = summary_body(text)
            if body.startswith(DIGEST_OPENERS):
                self._merge(body)
            else:
                self.earlier.append(body)
        elif isinstance(part, Text):  # the user's own words; every other injected block is skipped
            self.lists[REQUESTS].append(first_chars(" ".join(text.split()), ITEM_CHARS))
            self.lists[DECISIONS].extend(
                first_chars(s, ITEM_CHARS) for s in _sentences(text) if DECISION_WORDS.search(s)
            )

    def _merge(self, body: str) -> None:
        """Put an earlier digest's items in front of the lists being built (they are older)."""
        for chunk in body.split("\n\n"):
            title, _, items = chunk.partition(":\n")
            if title in self.lists:
                older = [line[2:] for line in items.splitlines() if line.startswith("- ")]
                self.lists[title][:0] = older

    def _call(self, args: JsonMapping) -> None:
        for key in PATH_KEYS:
            path = args.get(key)
            if isinstance(path, str):
                self.lists[FILES].append(path)
        command = args.get("command")
        if isinstance(command, str):
            self.lists[COMMANDS].append(first_chars(command, COMMAND_CHARS))

    def _errors(self, result: ToolResult) -> None:
        text = result.text
        if result.is_error:
            self.lists[ERRORS].append(first_chars(text, ITEM_CHARS))
            return
        found = next((line.strip() for line in text.splitlines() if ERROR_LINE.search(line)), None)
        if found:  # the first error-looking line of an output is usually the exception itself
            self.lists[ERRORS].append(first_chars(found, ITEM_CHARS))

    def text(self, reason: str | None) -> str:
        header = (
            f"{DIGEST_OPENERS[1]}: {reason}. This digest was extracted by rule from the dropped messages.)"
            if reason
            else f"{DIGEST_OPENERS[0]}, extracted by rule.)"
        )
        parts = [header]
        if self.earlier:
            parts.append("Earlier summary:\n" + first_chars("\n".join(self.earlier), DIGEST_SUMMARY_CHARS))
        for title, limit in DIGEST_SECTIONS:
            if self.lists[title]:
                parts.append(f"{title}:\n" + "\n".join(f"- {item}" for item in _unique_tail(self.lists[title], limit)))
        if self.last_note:
            parts.append("Last assistant message:\n" + first_chars(self.last_note, LAST_NOTE_CHARS))
        return "\n\n".join(parts)


def deterministic_digest(messages: Sequence[Message], reason: str | None = None) -> str:
    """The digest of ``messages`` (see the module docstring); ``reason`` says why no model wrote it."""
    digest = _Digest()
    for message in messages:
        digest.add(message)
    return digest.text(reason)


def summary_body(text: str) -> str:
    """What stands between the summary tags of a summary block (the whole text when untagged)."""
    open_tag, close_tag = (re.escape(tag) for tag in SUMMARY_TAGS)
    match = re.search(rf"{open_tag}\n?(.*?)\n?{close_tag}", text, re.DOTALL)
    return match.group(1) if match else text


def first_chars(text: str, limit: int) -> str:
    """``text`` stripped, cut to ``limit`` characters with an ellipsis."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _sentences(text: str) -> list[str]:
    return [part.strip() for part in re.split(r"(?<=[.!?])\s+|\n+", text) if part.strip()]


def _unique_tail(items: list[str], limit: int) -> list[str]:
    """The last ``limit`` distinct items, in order of last appearance."""
    seen: dict[str, None] = {}
    for item in reversed(items):
        if item not in seen:
            seen[item] = None
        if len(seen) >= limit:
            break
    return list(reversed(seen))


__all__ = ["DIGEST_SECTIONS", "deterministic_digest", "first_chars", "summary_body"]
