"""The one owner of every piece of text memagent injects into the conversation.

memagent adds text the user did not type: retrieved memories, the profile, a compaction summary,
re-injected state, reminders, the note that a request was interrupted, the placeholder of an
elided tool result, the continuity note at session start, project instructions. Each has a
:class:`Marker` here. An injected text is stored as an item that carries its marker as data
(:class:`memagent.llm.items.Injected`, the block's ``injected`` field holding
:attr:`Marker.key`), so a reader asks the item, never the text's opening words; the text the
model reads is built by the functions below and is the same as before the field existed.

Recognising a kind by its opening words (:meth:`Marker.legacy_kind`, :func:`kind_of` on a
string) remains only for what has no field: transcripts written before it, and texts memory
extraction still reads as strings.

A leaf module: it imports nothing of memagent, so every room may use it.
"""

from __future__ import annotations

import enum


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

    @property
    def key(self) -> str:
        """The stable name stored in a transcript (``memories``, ``summary``, ``reminder`` …)."""
        return self.name.lower()

    @classmethod
    def from_key(cls, key: object) -> Marker | None:
        """The marker a stored ``injected`` field names; None for a missing or unknown name."""
        if not isinstance(key, str):
            return None
        return cls.__members__.get(key.upper())

    @classmethod
    def legacy_kind(cls, text: str) -> Marker | None:
        """The kind an earlier version meant by a text opening with a marker's words."""
        return kind_of(text)


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


def kind_of(text: str) -> Marker | None:
    """Which injected text ``text`` opens like, by its opening words; None when it opens like
    none. Only for text that has no item (earlier transcripts, memory extraction's strings):
    a stored block says its kind itself (:func:`memagent.llm.items.kind_of`)."""
    if text == Marker.INTERRUPTED_REQUEST.value:
        return Marker.INTERRUPTED_REQUEST
    for marker in Marker:
        if marker is not Marker.INTERRUPTED_REQUEST and text.startswith(marker.value):
            return marker
    for opener, marker in _LEGACY_OPENERS.items():
        if text.startswith(opener):
            return marker
    return None


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
    "kind_of",
    "reminder",
    "summary_block",
]
