"""Layer 1 of compaction: old tool results become one-line placeholders in the request.

Only the request changes: the conversation and the transcript keep every result in full. Tool
results older than the newest ``keep`` become the placeholder of
:func:`memagent.markers.elided_result`, naming the tool and where the full output lives (the
``recall`` tool brings it back exactly); results of at most :data:`SHORT_RESULT_CHARS` characters
of text stay.

The elision boundary only moves in steps of ``batch`` results, so between two steps each request
is an append-only extension of the previous one and the provider's prompt cache keeps hitting.
The view is a pure function of the messages: resume and compaction need no extra state to
reproduce it.
"""

from __future__ import annotations

from collections.abc import Sequence

from memagent.context.history import tool_names_by_id
from memagent.llm.items import ToolResult, block, item, tool_results
from memagent.llm.types import Block, Message
from memagent.markers import Marker, elided_result

SHORT_RESULT_CHARS = 100


def elision_boundary(total_results: int, keep: int, batch: int) -> int:
    """How many of the oldest tool results are elided: a multiple of ``batch``, never the newest ``keep``."""
    eligible = max(0, total_results - max(0, keep))
    step = max(1, batch)
    return (eligible // step) * step


def tool_result_positions(messages: Sequence[Message]) -> list[tuple[int, int]]:
    """(message index, block index) of every tool_result, oldest first."""
    return [
        (mi, bi)
        for mi, m in enumerate(messages)
        if m.get("role") == "user"
        for bi, b in enumerate(m.get("content", []))
        if isinstance(item(b), ToolResult)
    ]


def elide_old_tool_results(
    messages: Sequence[Message], *, keep: int, batch: int, where: str, boundary: int | None = None
) -> list[Message]:
    """A copy of ``messages`` with old, long tool results replaced by placeholders.

    The oldest ``boundary`` results are elided (default: :func:`elision_boundary`), never one of
    the newest ``keep``. The input is not mutated; untouched messages are shared, not copied.
    Roles, ids, block order and ``is_error`` flags are kept, so the invariants hold as before.
    """
    positions = tool_result_positions(messages)
    if boundary is None:
        boundary = elision_boundary(len(positions), keep, batch)
    boundary = max(0, min(boundary, len(positions) - max(0, keep)))
    out = list(messages)
    if boundary == 0:
        return out
    names = tool_names_by_id(messages)
    copied: set[int] = set()
    for mi, bi in positions[:boundary]:
        block = out[mi]["content"][bi]
        result = item(block)
        if not isinstance(result, ToolResult) or _is_short(result):
            continue
        if mi not in copied:
            out[mi] = {**out[mi], "content": list(out[mi]["content"])}
            copied.add(mi)
        out[mi]["content"][bi] = _placeholder(result, names, where)
    return out


def _is_short(result: ToolResult) -> bool:
    """Short text only: an image or any other non-text block is always worth eliding."""
    return not result.has_non_text and len(result.text) <= SHORT_RESULT_CHARS


def _placeholder(result: ToolResult, names: dict[str, str], where: str) -> Block:
    """The elided result: memagent's own text, marked as such, in place of the tool's answer."""
    text = elided_result(names.get(result.tool_use_id, "a tool"), where, result.tool_use_id)
    return block(ToolResult(result.tool_use_id, text, result.is_error, marker=Marker.ELIDED_RESULT))


def count_elided(messages: Sequence[Message]) -> int:
    """How many tool results of ``messages`` are placeholders."""
    return sum(
        1 for m in messages for result in tool_results(m.get("content")) if result.marker is Marker.ELIDED_RESULT
    )


__all__ = [
    "SHORT_RESULT_CHARS",
    "count_elided",
    "elide_old_tool_results",
    "elision_boundary",
    "tool_result_positions",
]
