"""Layer 2 of compaction: where to cut, what the summariser reads, and the head that replaces the cut.

The cut is made at a turn boundary (a user message with no tool results) when the kept part fits
the budget, otherwise before an assistant message inside the current turn: never between a
``tool_use`` and its result (:func:`choose_cut`).

The dropped part is rendered as plain text (long tool outputs shortened) for the summary model,
which is asked for a structured working summary (:data:`SUMMARY_SYSTEM`). The small model is
tried first; an endpoint that does not know it (a 404, e.g. a local server with a single model)
gets the session's own model once instead; any other failure, or an empty answer, falls back to
:func:`memagent.context.digest.deterministic_digest` (:func:`summarise`).

The head (:func:`summary_head`) is the user message that takes the dropped part's place: the
summary block (:func:`memagent.markers.summary_block`) with a pointer to the full transcript,
then the state re-injected from its stores (:attr:`memagent.markers.Marker.STATE`), then — when
the cut split a turn — the user's request for that turn, verbatim
(:attr:`memagent.markers.Marker.CURRENT_REQUEST`). Resume rebuilds the same head from the
``compaction`` record, so these texts must stay byte-identical across versions.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from memagent.context.digest import deterministic_digest, first_chars
from memagent.context.history import is_turn_start, tool_names_by_id
from memagent.llm.items import Injected, Text, ToolResult, ToolUse, injected, message_items
from memagent.llm.protocol import ChatModel
from memagent.llm.types import Block, Message, ModelRequest, ResponseComplete, text_block
from memagent.markers import Marker, block, summary_block

SUMMARY_MAX_TOKENS = 2_048
RENDER_RESULT_CHARS = 2_000  # per tool result in the text handed to the summariser
RENDER_TOTAL_CHARS = 300_000  # about 75k tokens: fits any summary model's window
REQUEST_CHARS = 4_000  # the current request carried over a mid-turn cut

SUMMARY_SYSTEM = """\
You condense the older part of a coding-agent session into the working summary the agent will \
continue from. The agent keeps only your summary and the newest messages, so anything you leave \
out is lost to it (the raw transcript stays on disk and can be searched with its recall tool).

Write these sections, in this order, as Markdown headings:
## Goal — what the user wants overall, in their terms.
## Progress — what has been done and verified so far.
## Decisions — choices made and why (including the user's preferences and constraints).
## Files touched — every file read, created or changed, with one line on what matters in it.
## Errors and failed approaches — exact error messages, and approaches that did not work.
## Open questions — anything unresolved or waiting for the user.
## Next step — the single next action.

Rules: copy file paths, identifiers, commands, numbers and error messages verbatim. If the text \
contains an earlier summary, fold all of its facts into yours; do not drop them. State facts, not \
narration. Do not invent anything. Stay under 900 words."""

SUMMARY_INSTRUCTION = "Write the working summary of the conversation above, following your instructions."


# ------------------------------------------------------------------ the cut


def cut_candidates(messages: Sequence[Message]) -> tuple[list[int], list[int]]:
    """Indexes where the kept tail may start: turn starts, and assistant messages (mid-turn)."""
    turns = [i for i in range(1, len(messages)) if is_turn_start(messages[i])]
    mids = [i for i in range(1, len(messages)) if messages[i].get("role") == "assistant"]
    return turns, mids


def choose_cut(messages: Sequence[Message], budget: int, tail_tokens: Callable[[int], int]) -> int | None:
    """Where the kept tail starts, or None when nothing can be dropped.

    The largest tail that starts at a turn boundary and fits ``budget``; else the largest that
    starts at an assistant message after the last turn start; else the smallest possible tail.
    ``tail_tokens(i)`` is the size of the history that would result from cutting at ``i``.
    """
    turns, mids = cut_candidates(messages)
    if not turns and not mids:
        return None
    best = _largest_fitting(turns, budget, tail_tokens)
    if best is not None:
        return best
    last_turn = turns[-1] if turns else 0
    best = _largest_fitting([i for i in mids if i > last_turn], budget, tail_tokens)
    if best is not None:
        return best
    return max(turns + mids)


def _largest_fitting(candidates: list[int], budget: int, tail_tokens: Callable[[int], int]) -> int | None:
    best = None
    for index in reversed(candidates):
        if tail_tokens(index) > budget:
            break
        best = index
    return best


# ------------------------------------------------------------- the summary


def render_for_summary(messages: Sequence[Message], focus: str | None) -> str:
    """The dropped part as plain text for the summary model, long tool outputs shortened."""
    names = tool_names_by_id(messages)
    lines: list[str] = []
    for message in messages:
        role = message.get("role", "?").upper()
        for part in message_items(message):
            if isinstance(part, (Text, Injected)):
                lines.append(f"{role}: {part.text}")
            elif isinstance(part, ToolUse):
                args = json.dumps(dict(part.input), ensure_ascii=False)
                lines.append(f"{role} called {part.name} {_shorten(args, RENDER_RESULT_CHARS)}")
            elif isinstance(part, ToolResult):
                tool = names.get(part.tool_use_id, "tool")
                flag = " (error)" if part.is_error else ""
                lines.append(f"RESULT of {tool}{flag}: {_shorten(part.text, RENDER_RESULT_CHARS)}")
    text = "\n\n".join(lines)
    if len(text) > RENDER_TOTAL_CHARS:
        head = RENDER_TOTAL_CHARS * 3 // 10
        text = text[:head] + "\n\n[… middle of the conversation omitted …]\n\n" + text[-(RENDER_TOTAL_CHARS - head) :]
    request = "<conversation>\n" + text + "\n</conversation>\n\n" + SUMMARY_INSTRUCTION
    if focus:
        request += f"\nThe user asked the summary to focus on: {focus}"
    return request


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + f"\n[… {len(text) - limit} characters omitted …]\n" + text[-half:]


def complete(model: ChatModel, request: ModelRequest) -> str:
    """Run a request to completion and return its text."""
    for event in model.stream(request):
        if isinstance(event, ResponseComplete):
            return event.response.text()
    return ""


def summarise(
    model: ChatModel, dropped: list[Message], focus: str | None, *, small_model: str | None, session_model: str | None
) -> tuple[str, str | None, str | None]:
    """(summary, the model that wrote it, the reason for the fallback when none could).

    ``small_model`` first; when the endpoint does not know it, the session's own model (the
    request's default, ``None``) once; otherwise the rule-based digest, written by no model.
    """
    rendered = render_for_summary(dropped, focus)
    attempts = [small_model]
    reason = "empty summary"
    while attempts:
        name = attempts.pop(0)
        request = ModelRequest(
            system=[text_block(SUMMARY_SYSTEM)],
            messages=[{"role": "user", "content": [text_block(rendered)]}],
            tools=[],
            max_tokens=SUMMARY_MAX_TOKENS,
            model=name,
        )
        try:
            text = complete(model, request).strip()
        except Exception as exc:  # any failure falls back; KeyboardInterrupt still ends the turn
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if name is not None and unknown_model(reason):
                attempts.append(None)
            continue
        if text:
            return text, name or session_model, None
    return deterministic_digest(dropped, reason), None, reason


def unknown_model(reason: str) -> bool:
    """Does a model error say the endpoint has no such model (so another model may work)?"""
    lowered = reason.lower()
    return "404" in lowered or "not_found" in lowered or "not found" in lowered


# ---------------------------------------------------------------- the head


def summary_head(summary: str, state: Sequence[str], where: str, current_request: str | None) -> list[Block]:
    """The blocks of the user message that replaces the dropped history."""
    blocks = [
        injected(
            Marker.SUMMARY,
            summary_block(summary)
            + f"[Full transcript: {where}. The recall tool searches it and returns any earlier tool output exactly.]",
        )
    ]
    if state:
        blocks.append(injected(Marker.STATE, block(Marker.STATE, "\n" + "\n\n".join(s.strip() for s in state))))
    if current_request:
        blocks.append(injected(Marker.CURRENT_REQUEST, block(Marker.CURRENT_REQUEST, current_request)))
    return blocks


def assemble(
    head: list[Block], tail: Sequence[Message], tail_ids: Sequence[str], head_id: str
) -> tuple[list[Message], list[str]]:
    """[head] + tail, merging the head into the tail's first message when that is a user turn."""
    if tail and tail[0].get("role") == "user":
        first: Message = {"role": "user", "content": [*head, *tail[0]["content"]]}
        return [first, *tail[1:]], [tail_ids[0], *tail_ids[1:]]
    opening: Message = {"role": "user", "content": list(head)}
    return [opening, *tail], [head_id, *tail_ids]


def turn_request_text(messages: Sequence[Message], cut: int) -> str | None:
    """The user's words that opened the turn a mid-turn cut at ``cut`` splits, else None."""
    if cut <= 0 or is_turn_start(messages[cut]):
        return None
    for message in reversed(messages[:cut]):
        if is_turn_start(message):
            return first_chars("\n".join(request_texts(message)), REQUEST_CHARS) or None
    return None


def request_texts(message: Message) -> list[str]:
    """The user's own words in a turn-opening message: no injected item.

    A request carried over by an earlier compaction is the request itself.
    """
    texts = []
    for part in message_items(message):
        if isinstance(part, Injected) and part.kind is Marker.CURRENT_REQUEST:
            return [part.text.removeprefix(Marker.CURRENT_REQUEST.value).strip()]
        if isinstance(part, Text) and part.text:
            texts.append(part.text)
    return texts


__all__ = [
    "SUMMARY_INSTRUCTION",
    "SUMMARY_SYSTEM",
    "assemble",
    "choose_cut",
    "complete",
    "render_for_summary",
    "request_texts",
    "summarise",
    "summary_head",
    "turn_request_text",
]
