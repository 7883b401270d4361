"""The context policy: micro-compaction, auto-compaction and manual compaction (DESIGN §5).

Layer 1, :func:`elide_old_tool_results`: in the request (never in the conversation or the
transcript) tool results older than the newest ``keep_tool_results`` become a one-line
placeholder naming the tool and where the full output lives; results of ≤100 characters stay.
The elision boundary only moves in steps of ``micro_compact_batch`` results, so between steps
the request is an append-only extension of the previous one and the provider's prompt cache
keeps hitting. The view is a pure function of the messages: resume and compaction need no
extra state to reproduce it.

Layer 2, :meth:`CompactingContext.before_request`: when the request would reach
``settings.compaction_threshold`` tokens (usage-anchored, :mod:`memagent.context.tokens`), the
older part of the history is replaced by a structured summary written by ``settings.small_model``
(through the session's own ChatModel), followed by the text of every ``reinject`` callable (todo
list, tasks, memory profile — read from their stores at that moment, never from the summary) and
the newest turns kept verbatim. The cut is made at a turn boundary (a user message with no
tool results) when the kept part fits ``tail_fraction`` of the threshold, otherwise before an
assistant message inside the current turn — never between a ``tool_use`` and its result.
The transcript gets a ``compaction`` record; nothing in it is rewritten.

Circuit breaker: a compaction needs new messages since the previous one; one that would not make
the context smaller is abandoned with a warning; one that leaves the context still above the
threshold stops auto-compaction until the user's next turn (no paid loop); a failing summary call
falls back to a deterministic digest of the dropped part, which keeps the invariants.

Layer 3: :meth:`CompactingContext.request_compaction` (the ``compact`` tool; runs before the next
model call, never mid tool round) and :meth:`CompactingContext.force_compact` (``/compact`` and
the loop's "prompt is too long" retry) use the same routine.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from memagent.events import AgentEvent, Notice
from memagent.config import Settings
from memagent.context.conversation import Conversation
from memagent.context.policy import CompactionRequest
from memagent.context.history import INTERRUPTED_REQUEST
from memagent.context.tokens import MESSAGE_OVERHEAD, TokenCounter, estimate_block, estimator_name
from memagent.llm.invariants import request_problems
from memagent.llm.protocol import ChatModel
from memagent.llm.types import Block, Message, ModelRequest, ResponseComplete, Usage, text_block

SHORT_RESULT_CHARS = 100
PLACEHOLDER = "[Previous: used {tool} — full output: {where}#{tool_use_id}; recall it with the recall tool]"
SUMMARY_MAX_TOKENS = 2_048
RENDER_RESULT_CHARS = 2_000  # per tool result in the text handed to the summariser
RENDER_TOTAL_CHARS = 300_000  # about 75k tokens: fits any summary model's window
DIGEST_SUMMARY_CHARS = 6_000
SUMMARY_OPEN = "[This session was compacted to save context. Summary of the earlier conversation:]"
STATE_HEADER = "[Current state, re-injected from its stores (authoritative over the summary):]"
CURRENT_REQUEST_HEADER = "[The user's request for the turn in progress, verbatim:]"

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


# ---------------------------------------------------------------- helpers on blocks


def result_text(content: Any) -> str:
    """The text of a tool_result's content (a string, or a list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def has_tool_results(message: Message) -> bool:
    return any(b.get("type") == "tool_result" for b in message.get("content", []))


def is_turn_start(message: Message) -> bool:
    """A user message that opens a turn: it answers no tool call, so a cut before it is safe."""
    return message.get("role") == "user" and not has_tool_results(message)


def tool_names_by_id(messages: Sequence[Message]) -> dict[str, str]:
    return {
        b["id"]: str(b.get("name", "tool"))
        for m in messages
        if m.get("role") == "assistant"
        for b in m.get("content", [])
        if b.get("type") == "tool_use" and "id" in b
    }


def placeholder_text(tool: str, where: str, tool_use_id: str) -> str:
    return PLACEHOLDER.format(tool=tool, where=where, tool_use_id=tool_use_id)


# ------------------------------------------------------------ layer 1: elision


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
        if b.get("type") == "tool_result"
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
        if len(result_text(block.get("content"))) <= SHORT_RESULT_CHARS and not _has_non_text(block.get("content")):
            continue
        if mi not in copied:
            out[mi] = {**out[mi], "content": list(out[mi]["content"])}
            copied.add(mi)
        tool_use_id = str(block.get("tool_use_id", ""))
        replacement: Block = {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": placeholder_text(names.get(tool_use_id, "a tool"), where, tool_use_id),
        }
        if block.get("is_error"):
            replacement["is_error"] = True
        out[mi]["content"][bi] = replacement
    return out


def _has_non_text(content: Any) -> bool:
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") != "text" for b in content)


def count_elided(messages: Sequence[Message]) -> int:
    return sum(
        1
        for m in messages
        for b in m.get("content", [])
        if b.get("type") == "tool_result" and str(b.get("content", "")).startswith("[Previous: used ")
    )


# ------------------------------------------------------- layer 2: cut and summary


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


def render_for_summary(messages: Sequence[Message], focus: str | None) -> str:
    """The dropped part as plain text for the summary model, long tool outputs shortened."""
    names = tool_names_by_id(messages)
    lines: list[str] = []
    for message in messages:
        role = message.get("role", "?").upper()
        for block in message.get("content", []):
            kind = block.get("type")
            if kind == "text":
                lines.append(f"{role}: {block.get('text', '')}")
            elif kind == "tool_use":
                args = json.dumps(block.get("input") or {}, ensure_ascii=False)
                lines.append(f"{role} called {block.get('name')} {_shorten(args, RENDER_RESULT_CHARS)}")
            elif kind == "tool_result":
                tool = names.get(str(block.get("tool_use_id")), "tool")
                flag = " (error)" if block.get("is_error") else ""
                body = _shorten(result_text(block.get("content")), RENDER_RESULT_CHARS)
                lines.append(f"RESULT of {tool}{flag}: {body}")
    text = "\n\n".join(lines)
    if len(text) > RENDER_TOTAL_CHARS:
        head = RENDER_TOTAL_CHARS * 3 // 10
        text = text[:head] + "\n\n[… middle of the conversation omitted …]\n\n" + text[-(RENDER_TOTAL_CHARS - head):]
    request = "<conversation>\n" + text + "\n</conversation>\n\n" + SUMMARY_INSTRUCTION
    if focus:
        request += f"\nThe user asked the summary to focus on: {focus}"
    return request


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + f"\n[… {len(text) - limit} characters omitted …]\n" + text[-half:]


PATH_KEYS = ("path", "file_path", "file", "filename")
ERROR_LINE = re.compile(r"(\w+(Error|Exception)\b|\bFAILED\b|\bfatal:|\berror:|Traceback \(most recent)", re.IGNORECASE)


DIGEST_SECTIONS = (
    ("User requests", 20),
    ("Decisions and constraints stated by the user", 30),
    ("Files touched", 50),
    ("Commands run (latest)", 10),
    ("Errors seen (latest)", 20),
)
DECISION_WORDS = re.compile(
    r"\b(decision|decided|decide|we will|we'll|must|never|always|prefer|do not|don't|constraint|from now on)\b", re.IGNORECASE
)
DIGEST_MARKERS = ("(A digest of the earlier conversation", "(Summary model unavailable")


def deterministic_digest(messages: Sequence[Message], reason: str | None = None) -> str:
    """A summary extracted by rule: the fallback when the summary model fails.

    Keeps what an agent most needs to carry on: the user's requests, the files it touched, the
    commands it ran, the errors it saw (error results and error-looking lines of any output), and
    the latest assistant note. An earlier digest found in the dropped part is merged list by list
    (older items first, then capped), so repeated fallbacks do not nest; an earlier model-written
    summary is carried over verbatim (capped).
    """
    lists: dict[str, list[str]] = {title: [] for title, _ in DIGEST_SECTIONS}
    requests, decisions, files, commands, errors = (lists[title] for title, _ in DIGEST_SECTIONS)
    earlier: list[str] = []
    last_note = ""
    for message in messages:
        for block in message.get("content", []):
            kind = block.get("type")
            if kind == "text" and message.get("role") == "user":
                text = str(block.get("text", ""))
                if text.startswith(SUMMARY_OPEN):
                    body = _summary_body(text)
                    if body.startswith(DIGEST_MARKERS):
                        _merge_digest(body, lists)
                    else:
                        earlier.append(body)
                elif text.startswith(STATE_HEADER) or _is_memory_text(block):
                    continue
                elif text != INTERRUPTED_REQUEST and not text.startswith(("[", "<")):
                    requests.append(_first_chars(" ".join(text.split()), 300))
                    decisions.extend(_first_chars(s, 300) for s in _sentences(text) if DECISION_WORDS.search(s))
            elif kind == "text":
                last_note = str(block.get("text", ""))
            elif kind == "tool_use":
                _note_call(block.get("input") or {}, files, commands)
            elif kind == "tool_result":
                _note_errors(block, errors)
    header = (
        f"{DIGEST_MARKERS[1]}: {reason}. This digest was extracted by rule from the dropped messages.)"
        if reason else f"{DIGEST_MARKERS[0]}, extracted by rule.)"
    )
    parts = [header]
    if earlier:
        parts.append("Earlier summary:\n" + _first_chars("\n".join(earlier), DIGEST_SUMMARY_CHARS))
    for title, limit in DIGEST_SECTIONS:
        if lists[title]:
            parts.append(f"{title}:\n" + "\n".join(f"- {item}" for item in _unique_tail(lists[title], limit)))
    if last_note:
        parts.append("Last assistant message:\n" + _first_chars(last_note, 800))
    return "\n\n".join(parts)


def _sentences(text: str) -> list[str]:
    return [part.strip() for part in re.split(r"(?<=[.!?])\s+|\n+", text) if part.strip()]


def _merge_digest(body: str, lists: dict[str, list[str]]) -> None:
    """Put an earlier digest's items in front of the lists being built (they are older)."""
    for chunk in body.split("\n\n"):
        title, _, items = chunk.partition(":\n")
        if title in lists:
            older = [line[2:] for line in items.splitlines() if line.startswith("- ")]
            lists[title][:0] = older


def _summary_body(text: str) -> str:
    match = re.search(r"<summary>\n?(.*?)\n?</summary>", text, re.DOTALL)
    return match.group(1) if match else text


def _note_call(args: dict, files: list[str], commands: list[str]) -> None:
    for key in PATH_KEYS:
        if isinstance(args.get(key), str):
            files.append(args[key])
    if isinstance(args.get("command"), str):
        commands.append(_first_chars(args["command"], 200))


def _note_errors(block: Block, errors: list[str]) -> None:
    text = result_text(block.get("content"))
    if block.get("is_error"):
        errors.append(_first_chars(text, 300))
        return
    found = next((line.strip() for line in text.splitlines() if ERROR_LINE.search(line)), None)
    if found:  # the first error-looking line of an output is usually the exception itself
        errors.append(_first_chars(found, 300))


def _unique_tail(items: list[str], limit: int) -> list[str]:
    """The last ``limit`` distinct items, in order of last appearance."""
    seen: dict[str, None] = {}
    for item in reversed(items):
        if item not in seen:
            seen[item] = None
        if len(seen) >= limit:
            break
    return list(reversed(seen))


def _first_chars(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summary_head(summary: str, state: Sequence[str], where: str, current_request: str | None) -> list[Block]:
    """The blocks of the user message that replaces the dropped history."""
    blocks = [
        text_block(
            f"{SUMMARY_OPEN}\n<summary>\n{summary.strip()}\n</summary>\n"
            f"[Full transcript: {where}. The recall tool searches it and returns any earlier tool output exactly.]"
        )
    ]
    if state:
        blocks.append(text_block(STATE_HEADER + "\n\n" + "\n\n".join(s.strip() for s in state)))
    if current_request:
        blocks.append(text_block(f"{CURRENT_REQUEST_HEADER}\n{current_request}"))
    return blocks


def assemble(head: list[Block], tail: Sequence[Message], tail_ids: Sequence[str], head_id: str) -> tuple[list[Message], list[str]]:
    """[head] + tail, merging the head into the tail's first message when that is a user turn."""
    if tail and tail[0].get("role") == "user":
        first = {"role": "user", "content": list(head) + list(tail[0]["content"])}
        return [first] + list(tail[1:]), [tail_ids[0]] + list(tail_ids[1:])
    return [{"role": "user", "content": list(head)}] + list(tail), [head_id] + list(tail_ids)


def turn_request_text(messages: Sequence[Message], cut: int) -> str | None:
    """The user's words that opened the turn a mid-turn cut at ``cut`` splits, else None."""
    if cut <= 0 or is_turn_start(messages[cut]):
        return None
    for message in reversed(messages[:cut]):
        if is_turn_start(message):
            return _first_chars("\n".join(_request_texts(message)), 4_000) or None
    return None


def _request_texts(message: Message) -> list[str]:
    """The user's own words in a turn-opening message (not summaries, state, memories or markers)."""
    texts = []
    for block in message.get("content", []):
        text = str(block.get("text", "")) if block.get("type") == "text" else ""
        if text.startswith(CURRENT_REQUEST_HEADER):
            return [text[len(CURRENT_REQUEST_HEADER):].strip()]
        if not text or text == INTERRUPTED_REQUEST or _is_memory_text(block):
            continue
        if text.startswith(SUMMARY_OPEN) or text.startswith(STATE_HEADER):
            continue
        texts.append(text)
    return texts


def complete(model: ChatModel, request: ModelRequest) -> str:
    """Run a request to completion and return its text."""
    for event in model.stream(request):
        if isinstance(event, ResponseComplete):
            return event.response.text()
    return ""


# ----------------------------------------------------------------- the policy


@dataclass
class CompactionResult:
    """What one compaction did (also the body of its transcript record)."""

    tokens_before: int
    tokens_after: int
    kept_from: str
    dropped: int
    summary: str
    summary_model: str | None = None  # None: the rule-based digest
    fallback_reason: str | None = None


class CompactingContext:
    """The :class:`~memagent.context.policy.ContextPolicy` of a real session.

    ``reinject``: callables returning text to put back verbatim after a compaction (todo list,
    ready/in-progress tasks, memory profile); None or blank means nothing to add.
    ``before_drop(messages, ids)``: called with exactly the messages about to leave the context
    (memory extraction). A failing hook is reported as a warning and never stops a compaction.
    ``transcript_name``: how the transcript is shown to the user and the model,
    e.g. ``.transcripts/<session>.jsonl``.
    """

    def __init__(
        self,
        *,
        model: ChatModel,
        settings: Settings,
        session_id: str,
        transcript_name: str,
        system: list[Block],
        tools: list[dict],
        reinject: Sequence[Callable[[], str | None]] = (),
        before_drop: Sequence[Callable[[list[Message], list[str]], None]] = (),
        tail_fraction: float = 0.3,
        requests: CompactionRequest | None = None,
    ) -> None:
        self.model = model
        self.settings = settings
        self.session_id = session_id
        self.transcript_name = transcript_name
        self.system = system
        self.tools = tools
        self.reinject = list(reinject)
        self.before_drop = list(before_drop)
        self.tail_fraction = tail_fraction
        self.counter = TokenCounter()
        self.compactions = 0
        self.requests = requests or CompactionRequest()  # the compact tool's asks
        # (messages list, its length, its last message, elided view): messages are appended or
        # replaced, never edited in place
        self._view_memo: tuple[list[Message], int, Message | None, list[Message]] | None = None
        self._conversation: Conversation | None = None
        self._compacted_at: tuple[Any, ...] | None = None  # conversation marker after the last compaction
        self._turns_seen = 0
        self._last_turn_marker: tuple[Any, ...] | None = None
        self._wait_for_turn_after: int | None = None  # set when a compaction did not get below the threshold
        self._warned_waiting = False

    # ------------------------------------------------------------ protocol

    @property
    def threshold(self) -> int:
        return self.settings.compaction_threshold

    def view(self, conversation: Conversation) -> list[Message]:
        """The elided history. Memoised on the conversation's state: token counting before a
        request and building the request itself both need it, and it is a full pass."""
        self._conversation = conversation
        messages = conversation.messages
        last = messages[-1] if messages else None
        memo = self._view_memo
        # identity, with references held, so a replaced list cannot alias a new one
        if memo is None or memo[0] is not messages or memo[1] != len(messages) or memo[2] is not last:
            memo = self._view_memo = (messages, len(messages), last, self._elide(messages))
        return memo[3]

    def observe(self, usage: Usage, sent: list[Message]) -> None:
        self.counter.observe(usage, sent, self.system, self.tools)

    def current_tokens(self, conversation: Conversation) -> int:
        return self.counter.context_tokens(self.system, self.tools, self.view(conversation))

    def before_request(self, conversation: Conversation) -> Iterator[AgentEvent]:
        self._conversation = conversation
        self._note_turn(conversation)
        asked, focus = self.requests.take()
        if asked:
            yield from self._compact(conversation, focus, manual=True)
            return
        tokens = self.current_tokens(conversation)
        if tokens < self.threshold:
            return
        if self._wait_for_turn_after is not None and self._turns_seen <= self._wait_for_turn_after:
            if not self._warned_waiting:
                self._warned_waiting = True
                yield Notice(
                    f"Context is {tokens:,} tokens, over the {self.threshold:,} threshold, but compacting again "
                    "now would not help; waiting for the next turn.",
                    "warning",
                )
            return
        if not self._has_new_messages(conversation):
            return
        yield from self._compact(conversation, None, manual=False, tokens_before=tokens)

    def force_compact(self, conversation: Conversation, focus: str | None = None) -> Iterator[AgentEvent]:
        self._conversation = conversation
        yield from self._compact(conversation, focus, manual=True)

    def request_compaction(self, focus: str | None = None) -> None:
        """Compact before the next model call (the ``compact`` tool: never mid tool round)."""
        self.requests.ask(focus)

    @property
    def compaction_requested(self) -> bool:
        return self.requests.pending

    # ------------------------------------------------------------ /context

    def report(self, conversation: Conversation | None = None) -> dict[str, Any]:
        """Where the context's tokens go, for ``/context``. Parts are estimates; ``total`` is usage-anchored."""
        conversation = conversation or self._conversation
        messages = self.view(conversation) if conversation is not None else []
        memory_system = [b for b in self.system if _is_memory_text(b)]
        plain_system = [b for b in self.system if not _is_memory_text(b)]
        tool_results = memory = other = 0
        for message in messages:
            other += math.ceil(MESSAGE_OVERHEAD * self.counter.correction)
            for block in message.get("content", []):
                size = math.ceil(estimate_block(block) * self.counter.correction)
                if block.get("type") == "tool_result":
                    tool_results += size
                elif _is_memory_text(block):
                    memory += size
                else:
                    other += size
        total = self.counter.context_tokens(self.system, self.tools, messages)
        return {
            "system": self.counter.estimate_fixed(plain_system, None),
            "tools": self.counter.estimate_fixed(None, self.tools),
            "messages": other,
            "tool_results": tool_results,
            "memory": memory + self.counter.estimate_fixed(memory_system, None),
            "total": total,
            "exact_anchor": self.counter.anchored,
            "threshold": self.threshold,
            "until_compaction": self.threshold - total,
            "message_count": len(messages),
            "elided_tool_results": count_elided(messages),
            "compactions": self.compactions,
            "estimator": estimator_name(),
            "transcript": self.transcript_name,
        }

    # ---------------------------------------------------------- internals

    def _elide(self, messages: Sequence[Message]) -> list[Message]:
        return elide_old_tool_results(
            messages,
            keep=self.settings.keep_tool_results,
            batch=self.settings.micro_compact_batch,
            where=self.transcript_name,
        )

    @staticmethod
    def _marker(conversation: Conversation) -> tuple[Any, ...]:
        messages = conversation.messages
        if not messages:
            return (0, None, 0)
        last_id = conversation.ids[-1] if conversation.ids else None
        return (len(messages), last_id, len(messages[-1].get("content", [])))

    def _note_turn(self, conversation: Conversation) -> None:
        """Count user turns: a new turn is a new message that opens one at the end of the history."""
        if not conversation.messages or not _opens_turn(conversation.messages[-1]):
            return
        marker = self._marker(conversation)
        if marker != self._last_turn_marker:
            self._last_turn_marker = marker
            self._turns_seen += 1

    def _has_new_messages(self, conversation: Conversation) -> bool:
        return self._compacted_at is None or self._marker(conversation) != self._compacted_at

    def _tail_budget(self) -> int:
        fixed = self.counter.estimate_fixed(self.system, self.tools)
        return max(1, int(self.threshold * self.tail_fraction) - fixed)

    def _compact(
        self, conversation: Conversation, focus: str | None, *, manual: bool, tokens_before: int | None = None
    ) -> Iterator[AgentEvent]:
        """The one compaction routine behind auto, tool, /compact and prompt-too-long."""
        if not self._has_new_messages(conversation):
            yield Notice("Nothing new to compact since the last compaction.", "info" if manual else "warning")
            return
        messages, ids = list(conversation.messages), list(conversation.ids)
        tokens_before = tokens_before if tokens_before is not None else self.current_tokens(conversation)
        cut = self._choose_cut(messages, ids)
        if cut is None:
            self._compacted_at = self._marker(conversation)
            yield Notice("Nothing to compact: the conversation is a single message.", "info" if manual else "warning")
            return
        yield from self._run_before_drop(messages[:cut], ids[:cut])
        summary, summary_model, fallback = self._summarise(messages[:cut], focus)
        state, state_warnings = self._reinjected_state()
        for warning in state_warnings:
            yield Notice(warning, "warning")
        current_request = turn_request_text(messages, cut)
        head = summary_head(summary, state, self.transcript_name, current_request)
        new_messages, new_ids = assemble(head, messages[cut:], ids[cut:], f"compaction-{self.compactions + 1}")
        problem = self._refusal(new_messages, tokens_before)
        if problem:
            self._compacted_at = self._marker(conversation)
            self._wait_for_turn_after, self._warned_waiting = self._turns_seen, False
            yield Notice(problem, "warning")
            return
        tokens_after = self.counter.context_tokens(self.system, self.tools, self._elide(new_messages))
        result = CompactionResult(tokens_before, tokens_after, ids[cut], cut, summary, summary_model, fallback)
        conversation.record(self._record(result, focus, state, ids[:cut], current_request))
        conversation.replace(new_messages, new_ids)
        self._after_compaction(conversation, tokens_after)
        yield Notice(f"Compacted: {tokens_before:,} → {tokens_after:,} tokens; full transcript: {self.transcript_name}")
        if fallback:
            yield Notice(f"The summary model failed ({fallback}); older messages were condensed by rule instead.", "warning")

    def _choose_cut(self, messages: list[Message], ids: list[str]) -> int | None:
        placeholder_head = summary_head("…" * 200, [], self.transcript_name, None)

        def tail_tokens(index: int) -> int:
            rebuilt, _ = assemble(placeholder_head, messages[index:], ids[index:], "compaction")
            return self.counter.estimate_messages(self._elide(rebuilt))

        return choose_cut(messages, self._tail_budget(), tail_tokens)

    def _run_before_drop(self, dropped: list[Message], dropped_ids: list[str]) -> Iterator[AgentEvent]:
        for hook in self.before_drop:
            try:
                hook(list(dropped), list(dropped_ids))
            except Exception as exc:  # extraction trouble must never block a compaction
                yield Notice(f"A pre-compaction hook failed: {type(exc).__name__}: {exc}", "warning")

    def _refusal(self, new_messages: list[Message], tokens_before: int) -> str | None:
        """Why the rebuilt history must not replace the current one, or None when it may."""
        problems = request_problems(self._elide(new_messages))
        if problems:  # cannot happen with the cut rules; refuse rather than send a broken request
            return f"Compaction abandoned: it would break the conversation ({problems[0]})."
        tokens_after = self.counter.context_tokens(self.system, self.tools, self._elide(new_messages))
        if tokens_after >= tokens_before:
            return (
                f"Compaction abandoned: the result ({tokens_after:,} tokens) would not be smaller than "
                f"the current context ({tokens_before:,})."
            )
        return None

    def _after_compaction(self, conversation: Conversation, tokens_after: int) -> None:
        """Arm the circuit breaker: new messages needed; still above the threshold → next turn."""
        self.compactions += 1
        self._compacted_at = self._marker(conversation)
        if _opens_turn(conversation.messages[-1]):
            self._last_turn_marker = self._compacted_at  # the rebuilt message is not a new turn
        still_over = tokens_after >= self.threshold
        self._wait_for_turn_after = self._turns_seen if still_over else None
        self._warned_waiting = False

    def _record(
        self, result: CompactionResult, focus: str | None, state: list[str], dropped_ids: list[str],
        current_request: str | None,
    ) -> dict:
        """The transcript record; with it, resume rebuilds exactly the head this compaction built."""
        record: dict[str, Any] = {
            "type": "compaction",
            "summary": result.summary,
            "reinjected": state,
            "current_request": current_request,
            "transcript_name": self.transcript_name,
            "kept_from": result.kept_from,
            "dropped_from": dropped_ids[0] if dropped_ids else None,
            "dropped_messages": result.dropped,
            "tokens_before": result.tokens_before,
            "tokens_after": result.tokens_after,
            "focus": focus,
            "summary_model": result.summary_model,
        }
        if result.fallback_reason:
            record["fallback"] = result.fallback_reason
        return record

    def _summarise(self, dropped: list[Message], focus: str | None) -> tuple[str, str | None, str | None]:
        """(summary, the model that wrote it, the reason for the fallback when none could).

        The small model first. If the endpoint does not know it (a 404 — e.g. a local server
        with a single model) the session's own model is asked once instead; any other failure,
        or an empty answer, falls back to :func:`deterministic_digest`.
        """
        rendered = render_for_summary(dropped, focus)
        attempts = [self.settings.small_model]
        reason = "empty summary"
        while attempts:
            model = attempts.pop(0)
            request = ModelRequest(
                system=[text_block(SUMMARY_SYSTEM)],
                messages=[{"role": "user", "content": [text_block(rendered)]}],
                tools=[],
                max_tokens=SUMMARY_MAX_TOKENS,
                model=model,
            )
            try:
                text = complete(self.model, request).strip()
            except Exception as exc:  # any failure falls back; KeyboardInterrupt still ends the turn
                reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                if model is not None and _unknown_model(reason):
                    attempts.append(None)
                continue
            if text:
                return text, model or self.settings.model, None
        return deterministic_digest(dropped, reason), None, reason

    def _reinjected_state(self) -> tuple[list[str], list[str]]:
        texts: list[str] = []
        warnings: list[str] = []
        for provider in self.reinject:
            try:
                text = provider()
            except Exception as exc:
                warnings.append(f"Could not re-inject state after compaction: {type(exc).__name__}: {exc}")
                continue
            if text and text.strip():
                texts.append(text.strip())
        return texts, warnings


MEMORY_PREFIXES = ("Relevant long-term memories", "What you know about this user", "Profile from long-term memory")


def _unknown_model(reason: str) -> bool:
    """Does a model error say the endpoint has no such model (so another model may work)?"""
    lowered = reason.lower()
    return "404" in lowered or "not_found" in lowered or "not found" in lowered


def _opens_turn(message: Message) -> bool:
    """A turn start, or a new request merged after the results of a cancelled tool round."""
    if message.get("role") != "user":
        return False
    return is_turn_start(message) or any(
        b.get("type") == "text" and b.get("text") == INTERRUPTED_REQUEST for b in message.get("content", [])
    )


def render_report(report: dict[str, Any]) -> str:
    """``/context`` as plain text lines (the REPL may style them)."""
    total = max(1, int(report["total"]))
    lines = [f"Context: {report['total']:,} tokens ({'usage-anchored' if report.get('exact_anchor') else 'estimated'})"]
    for key, label in (("system", "system prompt"), ("tools", "tool schemas"), ("messages", "messages"),
                       ("tool_results", "tool results"), ("memory", "memory")):
        lines.append(f"  {label:<14}{report[key]:>9,}  {100 * report[key] / total:5.1f}%")
    distance = report["until_compaction"]
    where = f"{distance:,} tokens until auto-compaction" if distance > 0 else "over the threshold: compacts before the next request"
    lines.append(f"Threshold {report['threshold']:,}: {where}")
    lines.append(
        f"{report['elided_tool_results']} old tool results elided, {report['compactions']} compactions this session; "
        f"full transcript: {report['transcript']}"
    )
    return "\n".join(lines)


def _is_memory_text(block: Block) -> bool:
    """A block the memory layer added: per-turn retrieved cards, or the profile in the system prompt."""
    return block.get("type") == "text" and str(block.get("text", "")).startswith(MEMORY_PREFIXES)


__all__ = [
    "CompactingContext",
    "CompactionResult",
    "PLACEHOLDER",
    "choose_cut",
    "deterministic_digest",
    "elide_old_tool_results",
    "elision_boundary",
    "render_for_summary",
    "render_report",
    "result_text",
]
