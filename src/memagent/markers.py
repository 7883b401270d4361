"""The one owner of every piece of text memagent injects into the conversation.

memagent adds text the user did not type: retrieved memories, the profile, a compaction summary,
re-injected state, reminders, the note that a request was interrupted, the placeholder of an
elided tool result, the continuity note at session start, project instructions. Each has a
:class:`Marker` here, and every reader that must tell injected text from the user's words
(sessions listing, compaction, memory extraction, the runtime's recent-text window) asks
:func:`kind_of` instead of matching string prefixes of its own.

A leaf module: it imports nothing of memagent, so every room may use it.
"""

from __future__ import annotations

import enum
from typing import Any, Mapping


class Marker(enum.Enum):
    """Kinds of injected text. The value is the exact opening text of a block of that kind."""

    INTERRUPTED_REQUEST = "[The previous request got no answer: it was interrupted or failed.]"
    SUMMARY = "[This session was compacted to save context. Summary of the earlier conversation:]"
    STATE = "[Current state, re-injected from its stores (authoritative over the summary):]"
    CURRENT_REQUEST = "[The user's request for the turn in progress, verbatim:]"
    MEMORIES = "Relevant long-term memories:"
    PROFILE = "What you know about this user and project (from memory):"
    CONTINUITY = "[Where the project stands, from its stores at session start:]"
    INSTRUCTIONS = "[Project instructions"
    SKILLS = "[Skills available"
    ELIDED_RESULT = "[Previous: used "
    REMINDER = "<reminder>"
    CONTEXT = "<context"
    HOOK_CONTEXT = "[Context from the user's hooks"


# Text a tool_result carries when its call never finished (not a block opener, but injected).
INTERRUPTED_TOOL = "Tool call interrupted before it finished (cancelled by the user or the session stopped)."

# The elided tool result, layer 1 of compaction.
ELIDED_RESULT = "[Previous: used {tool} — full output: {where}#{tool_use_id}; recall it with the recall tool]"

# The summary body inside a SUMMARY block, and the openers of the two fallbacks.
SUMMARY_TAGS = ("<summary>", "</summary>")
DIGEST_OPENERS = ("(A digest of the earlier conversation", "(Summary model unavailable")

# Older spellings still found in transcripts written by earlier versions.
_LEGACY_OPENERS: dict[str, Marker] = {
    "Relevant long-term memories": Marker.MEMORIES,
    "Profile from long-term memory": Marker.PROFILE,
    "What you know about this user": Marker.PROFILE,
}


def text_of(block: Mapping[str, Any]) -> str | None:
    """The text of a text block, else None."""
    if block.get("type") != "text":
        return None
    return str(block.get("text", ""))


def kind_of(block: Mapping[str, Any] | str) -> Marker | None:
    """Which injected text a block (or a text) is; None for the user's or the model's own words."""
    text = block if isinstance(block, str) else text_of(block)
    if text is None:
        return None
    if text == Marker.INTERRUPTED_REQUEST.value:
        return Marker.INTERRUPTED_REQUEST
    for marker in Marker:
        if marker is not Marker.INTERRUPTED_REQUEST and text.startswith(marker.value):
            return marker
    for opener, marker in _LEGACY_OPENERS.items():
        if text.startswith(opener):
            return marker
    return None


def is_injected(block: Mapping[str, Any] | str) -> bool:
    return kind_of(block) is not None


def block(marker: Marker, body: str = "") -> str:
    """The text of a block of this kind: the marker's opener, then the body on the next line."""
    if marker is Marker.INTERRUPTED_REQUEST:
        return marker.value
    return f"{marker.value}\n{body}" if body else marker.value


def reminder(body: str) -> str:
    return f"{Marker.REMINDER.value}{body}</reminder>"


def elided_result(tool: str, where: str, tool_use_id: str) -> str:
    return ELIDED_RESULT.format(tool=tool, where=where, tool_use_id=tool_use_id)


def summary_block(summary: str) -> str:
    open_tag, close_tag = SUMMARY_TAGS
    return f"{Marker.SUMMARY.value}\n{open_tag}\n{summary.strip()}\n{close_tag}\n"


__all__ = [
    "DIGEST_OPENERS",
    "ELIDED_RESULT",
    "INTERRUPTED_TOOL",
    "Marker",
    "SUMMARY_TAGS",
    "block",
    "elided_result",
    "is_injected",
    "kind_of",
    "reminder",
    "summary_block",
    "text_of",
]
