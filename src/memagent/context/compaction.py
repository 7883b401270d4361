"""The context policy of a real session: when to compact, and the one routine that does it.

Layer 1 (:mod:`memagent.context.elision`): every request shows old tool results as one-line
placeholders; the conversation and the transcript keep them whole.

Layer 2, :meth:`CompactingContext.before_request`: when the request would reach
``settings.compaction_threshold`` tokens (usage-anchored, :mod:`memagent.llm.tokens`), the
older part of the history is replaced by a structured summary written by ``settings.small_model``
(through the session's own ChatModel, :mod:`memagent.context.summary`), followed by the text of
every ``reinject`` callable (todo list, tasks, memory profile — read from their stores at that
moment, never from the summary) and the newest turns kept verbatim. The kept part fits
``tail_fraction`` of the threshold when a turn boundary allows it. The transcript gets a
``compaction`` record; nothing in it is rewritten.

Background (``settings.compaction_background``, on by default; :mod:`memagent.context.prepared`):
past 75% of the threshold the summary of the part before the cut is written in a worker thread;
at the threshold it is swapped in without a model call. Until it is ready the turn goes on above
the threshold; only a full context (the request would not fit the window) waits for it. A notice
says what will be summarised and kept when the preparation starts, and what was when it lands.

Circuit breaker: a compaction needs new messages since the previous one; one that would not make
the context smaller is abandoned with a warning; one that leaves the context still above the
threshold stops auto-compaction until the user's next turn (no paid loop); a failing summary call
falls back to a deterministic digest of the dropped part (:mod:`memagent.context.digest`), which
keeps the invariants.

Layer 3: the ``compact`` tool (asking through the shared
:class:`~memagent.context.policy.CompactionRequest`; runs before the next model call, never mid
tool round) and :meth:`CompactingContext.force_compact` (``/compact``) use the same routine.

Oversized text (:mod:`memagent.context.oversize`): :meth:`CompactingContext.fit` sends a user
message or tool output above the inline limit as a preview and a file. Before every request the
size is measured against the model's window (the usage-anchored estimate; near the limit, the
API's count-tokens endpoint when the server has one) and the largest texts are set aside until it
fits. When the API still answers "prompt is too long", :meth:`CompactingContext.recover_too_long`
sets aside texts above a limit halved at each attempt (tool outputs first), then compacts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass

from memagent.config import Settings
from memagent.context.conversation import Conversation
from memagent.context.elision import count_elided, elide_old_tool_results
from memagent.context.history import is_turn_start
from memagent.context.oversize import MIN_LIMIT_TOKENS, Attached, AttachmentShelf
from memagent.context.policy import CompactionRequest, ContextReport
from memagent.context.prepared import PREPARE_FRACTION, Preparation, Summary, start_preparation
from memagent.context.summary import assemble, choose_cut, summarise, summary_head, turn_request_text
from memagent.events import AgentEvent, Notice
from memagent.jsontypes import JsonObject
from memagent.llm.invariants import request_problems
from memagent.llm.items import Injected, Text, ToolResult, item
from memagent.llm.protocol import ChatModel
from memagent.llm.tokens import (
    MESSAGE_OVERHEAD,
    TokenCounter,
    estimate_block,
    estimator_name,
    lazy_counter,
    upper_bound_counter,
)
from memagent.llm.types import Block, Message, ModelRequest, Usage
from memagent.markers import Marker
from memagent.markers import kind_of as legacy_kind

MEMORY_KINDS = (Marker.MEMORIES, Marker.PROFILE)
WINDOW_MARGIN = 0.95  # of the window less the answer: room for the estimate's error
EXACT_COUNT_FROM = 0.8  # of the request budget: above this, ask the API for the exact count
MAX_FIT_STEPS = 5  # halvings of the inline limit when a request does not fit the window


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
        tools: list[JsonObject],
        reinject: Sequence[Callable[[], str | None]] = (),
        before_drop: Sequence[Callable[[list[Message], list[str]], None]] = (),
        tail_fraction: float = 0.3,
        requests: CompactionRequest | None = None,
        shelf: AttachmentShelf | None = None,
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
        self.counter = TokenCounter(
            lazy_counter(settings.tokenizer, settings.tokenizer_json),
            upper_bound_counter(settings.tokenizer, settings.tokenizer_json),
        )
        self.compactions = 0
        self.requests = requests or CompactionRequest()  # the compact tool's asks
        self.shelf = shelf  # where oversized text goes (None: it is sent as it is)
        self._exact_count_failed = False  # the server has no count-tokens endpoint: estimate only
        # (messages list, its length, its last message, elided view): messages are appended or
        # replaced, never edited in place
        self._view_memo: tuple[list[Message], int, Message | None, list[Message]] | None = None
        self._conversation: Conversation | None = None
        self._compacted_at: tuple[int, str | None, int] | None = None  # conversation position after the last compaction
        # the conversation's user_turns when a compaction did not get below the threshold
        self._wait_for_turn_after: int | None = None
        self._warned_waiting = False
        self.background = settings.compaction_background
        self._preparation: Preparation | None = None  # the summary being written in the background
        self._noted_pending = False  # said once per preparation that the turn goes on without it

    # ------------------------------------------------------------ protocol

    @property
    def threshold(self) -> int:
        return self.settings.compaction_threshold

    @property
    def preparation(self) -> Preparation | None:
        """The summary being written in the background, if any (see :mod:`memagent.context.prepared`)."""
        return self._preparation

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

    def rewound(self) -> None:
        self._preparation = None
        self._view_memo = None
        self._compacted_at = None
        self._wait_for_turn_after = None
        self._warned_waiting = False

    def current_tokens(self, conversation: Conversation) -> int:
        return self.counter.context_tokens(self.system, self.tools, self.view(conversation))

    def _surely_below(self, conversation: Conversation, limit: float) -> bool:
        """True when the context is below ``limit`` by a bound that loads no encoding (False:
        count it)."""
        return self.counter.at_most(self.system, self.tools, self.view(conversation)) < limit

    def before_request(self, conversation: Conversation) -> Iterator[AgentEvent]:
        self._conversation = conversation
        yield from self._auto_compact(conversation)
        yield from self._fit_window(conversation)

    def _auto_compact(self, conversation: Conversation) -> Iterator[AgentEvent]:
        asked, focus = self.requests.take()
        if asked:
            yield from self._compact(conversation, focus, manual=True)
            return
        if self._surely_below(conversation, self.threshold * PREPARE_FRACTION if self.background else self.threshold):
            return
        tokens = self.current_tokens(conversation)
        if tokens < self.threshold:
            if self.background and tokens >= self.threshold * PREPARE_FRACTION:
                yield from self._prepare(conversation, tokens)
            return
        if self._wait_for_turn_after is not None and conversation.user_turns <= self._wait_for_turn_after:
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
        if self.background:
            yield from self._compact_prepared(conversation, tokens)
            return
        yield from self._compact(conversation, None, manual=False, tokens_before=tokens)

    def force_compact(self, conversation: Conversation, focus: str | None = None) -> Iterator[AgentEvent]:
        self._conversation = conversation
        yield from self._compact(conversation, focus, manual=True)

    # ------------------------------------------------------ oversized text

    @property
    def request_budget(self) -> int:
        """Tokens one request may carry: the window less the answer, with a margin for estimates."""
        return int((self.settings.context_window - self.settings.response_tokens) * WINDOW_MARGIN)

    def fit(self, blocks: list[Block]) -> tuple[list[Block], list[str]]:
        if self.shelf is None:
            return blocks, []
        fitted, found = self.shelf.fit(blocks)
        return fitted, [attached.note() for attached in found]

    def recover_too_long(self, conversation: Conversation, attempt: int) -> Generator[AgentEvent, None, bool]:
        """Set aside the largest texts: those above the inline limit halved ``attempt`` times, or
        halved further until one is; when none is left above the minimum, compact."""
        self._conversation = conversation
        if self.shelf is not None:
            limit = self.shelf.limit_tokens >> attempt
            while True:
                limit = max(MIN_LIMIT_TOKENS, limit)
                if (yield from self._shrink(conversation, limit)):
                    return True
                if limit == MIN_LIMIT_TOKENS:
                    break
                limit >>= 1
        before = self.compactions
        yield from self._compact(conversation, None, manual=True)
        return self.compactions > before

    def _fit_window(self, conversation: Conversation) -> Iterator[AgentEvent]:
        """Measure the request before it is sent; set aside the largest texts until it fits."""
        if self.shelf is None:
            return
        budget = self.request_budget
        if self._surely_below(conversation, budget * min(1.0, EXACT_COUNT_FROM)):
            return  # at most the budget, and too small to ask the API for an exact count
        for step in range(1, MAX_FIT_STEPS + 1):
            tokens = self.current_tokens(conversation)
            if tokens > budget * EXACT_COUNT_FROM:
                tokens = self._exact_tokens(conversation) or tokens
            if tokens <= budget:
                return
            limit = max(MIN_LIMIT_TOKENS, self.shelf.limit_tokens >> step)
            if not (yield from self._shrink(conversation, limit)) and limit == MIN_LIMIT_TOKENS:
                return  # nothing left to set aside: compaction or the API's answer decides

    def _shrink(self, conversation: Conversation, limit: int) -> Generator[AgentEvent, None, bool]:
        """Set aside every text above ``limit`` tokens, tool outputs first; True when any was."""
        assert self.shelf is not None
        for only in ("tool_result", "text"):
            messages, found = self.shelf.fit_messages(conversation.messages, limit, only=only)
            if found:
                changed = [i for i, (new, old) in enumerate(zip(messages, conversation.messages)) if new is not old]
                conversation.record(
                    {"type": "set_aside", "ids": [conversation.ids[i] for i in changed], "limit": limit}
                )
                conversation.replace(messages, list(conversation.ids))
                yield Notice(_shrunk_note(found), "warning")
                return True
        return False

    def _exact_tokens(self, conversation: Conversation) -> int | None:
        """The API's own count of the next request, when the server offers the endpoint."""
        count = getattr(self.model, "count_tokens", None)
        if count is None or self._exact_count_failed:
            return None
        request = ModelRequest(
            system=self.system,
            messages=list(self.view(conversation)),
            tools=self.tools,
            max_tokens=self.settings.response_tokens,
            model=self.settings.model,
        )
        try:
            return int(count(request))
        except Exception:  # no such endpoint (a proxy, a local server), or it failed: estimate quietly
            self._exact_count_failed = True
            return None

    # ------------------------------------------------------------ /context

    def report(self, conversation: Conversation | None = None) -> ContextReport:
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
                if isinstance(item(block), ToolResult):
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
            "estimator": estimator_name(self.settings.tokenizer, self.settings.tokenizer_json),
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
    def _position(conversation: Conversation) -> tuple[int, str | None, int]:
        """(messages, last id, blocks of the last message): changes with every append or merge."""
        messages = conversation.messages
        if not messages:
            return (0, None, 0)
        last_id = conversation.ids[-1] if conversation.ids else None
        return (len(messages), last_id, len(messages[-1].get("content", [])))

    def _has_new_messages(self, conversation: Conversation) -> bool:
        return self._compacted_at is None or self._position(conversation) != self._compacted_at

    def _tail_budget(self) -> int:
        fixed = self.counter.estimate_fixed(self.system, self.tools)
        return max(1, int(self.threshold * self.tail_fraction) - fixed)

    def _compact(
        self, conversation: Conversation, focus: str | None, *, manual: bool, tokens_before: int | None = None
    ) -> Iterator[AgentEvent]:
        """The one compaction routine behind auto, tool, /compact and prompt-too-long."""
        self._preparation = None  # written for another cut or without the focus: not used
        if not self._has_new_messages(conversation):
            yield Notice("Nothing new to compact since the last compaction.", "info" if manual else "warning")
            return
        messages, ids = list(conversation.messages), list(conversation.ids)
        tokens_before = tokens_before if tokens_before is not None else self.current_tokens(conversation)
        cut = self._choose_cut(messages, ids)
        if cut is None:
            self._compacted_at = self._position(conversation)
            yield Notice("Nothing to compact: the conversation is a single message.", "info" if manual else "warning")
            return
        if not manual:
            yield Notice(
                f"Context is {tokens_before:,} tokens (threshold {self.threshold:,}): compacting — "
                f"{_plan(messages, cut)}."
            )
        yield from self._run_before_drop(messages[:cut], ids[:cut])
        summary = self._write_summary(messages[:cut], focus)
        yield from self._swap(conversation, cut, summary, focus, tokens_before)

    def _write_summary(self, dropped: list[Message], focus: str | None = None) -> Summary:
        return summarise(
            self.model, dropped, focus, small_model=self.settings.small_model, session_model=self.settings.model
        )

    def _prepare(self, conversation: Conversation, tokens: int) -> Iterator[AgentEvent]:
        """Past 75% of the threshold: start writing the summary in the background (once per cut)."""
        if self._preparation is not None and self._preparation.matches(conversation):
            return
        if not self._has_new_messages(conversation):
            return
        messages, ids = list(conversation.messages), list(conversation.ids)
        # the kept part grows until the threshold: leave it the room it will take by then
        cut = self._choose_cut(messages, ids, self._tail_budget() - max(0, self.threshold - tokens))
        if cut is None:
            return
        self._preparation = start_preparation(messages[:cut], ids[:cut], self._write_summary)
        self._noted_pending = False
        yield Notice(
            f"Context is {tokens:,} tokens, {tokens * 100 // self.threshold}% of the {self.threshold:,} "
            f"compaction threshold: preparing its summary in the background — {_plan(messages, cut)}."
        )

    def _compact_prepared(self, conversation: Conversation, tokens: int) -> Iterator[AgentEvent]:
        """At the threshold: swap in the prepared summary; while it is being written the turn goes
        on, unless the context is full (then it waits)."""
        preparation = self._preparation
        if preparation is None or not preparation.matches(conversation):
            yield from self._prepare(conversation, tokens)
            preparation = self._preparation
            if preparation is None:
                return
        if not preparation.ready():
            if tokens < self.request_budget:
                if not self._noted_pending:
                    self._noted_pending = True
                    yield Notice(
                        f"Context is {tokens:,} tokens, past the {self.threshold:,} threshold; the summary "
                        "being prepared in the background replaces the older messages as soon as it is "
                        "ready (this turn does not wait for it)."
                    )
                return
            yield Notice("The context is full: waiting for the summary being prepared in the background.", "warning")
            preparation.wait()
        self._preparation = None
        messages, ids = list(conversation.messages), list(conversation.ids)
        yield from self._run_before_drop(messages[: preparation.cut], ids[: preparation.cut])
        yield from self._swap(conversation, preparation.cut, preparation.summary, None, tokens)

    def _swap(
        self, conversation: Conversation, cut: int, summary: Summary, focus: str | None, tokens_before: int
    ) -> Iterator[AgentEvent]:
        """Replace the first ``cut`` messages by the summary head (the rest kept verbatim)."""
        text, summary_model, fallback = summary
        messages, ids = list(conversation.messages), list(conversation.ids)
        state, state_warnings = self._reinjected_state()
        for warning in state_warnings:
            yield Notice(warning, "warning")
        current_request = turn_request_text(messages, cut)
        head = summary_head(text, state, self.transcript_name, current_request)
        new_messages, new_ids = assemble(head, messages[cut:], ids[cut:], f"compaction-{self.compactions + 1}")
        problem = self._refusal(new_messages, tokens_before)
        if problem:
            self._compacted_at = self._position(conversation)
            self._wait_for_turn_after, self._warned_waiting = conversation.user_turns, False
            yield Notice(problem, "warning")
            return
        tokens_after = self.counter.context_tokens(self.system, self.tools, self._elide(new_messages))
        result = CompactionResult(tokens_before, tokens_after, ids[cut], cut, text, summary_model, fallback)
        conversation.record(self._record(result, focus, state, ids[:cut], current_request))
        conversation.replace(new_messages, new_ids)
        self._after_compaction(conversation, tokens_after)
        kept = f"kept the {len(messages) - cut} newest verbatim" + (
            f", re-injected {len(state)} state block(s)" if state else ""
        )
        yield Notice(
            f"Compacted: {tokens_before:,} → {tokens_after:,} tokens; summarised the {cut} oldest messages, "
            f"{kept}; full transcript: {self.transcript_name}"
        )
        if fallback:
            yield Notice(
                f"The summary model failed ({fallback}); older messages were condensed by rule instead.", "warning"
            )

    def _choose_cut(self, messages: list[Message], ids: list[str], budget: int | None = None) -> int | None:
        placeholder_head = summary_head("…" * 200, [], self.transcript_name, None)

        def tail_tokens(index: int) -> int:
            rebuilt, _ = assemble(placeholder_head, messages[index:], ids[index:], "compaction")
            return self.counter.estimate_messages(self._elide(rebuilt))

        return choose_cut(messages, max(1, budget if budget is not None else self._tail_budget()), tail_tokens)

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
        self._compacted_at = self._position(conversation)
        still_over = tokens_after >= self.threshold
        self._wait_for_turn_after = conversation.user_turns if still_over else None
        self._warned_waiting = False

    def _record(
        self,
        result: CompactionResult,
        focus: str | None,
        state: list[str],
        dropped_ids: list[str],
        current_request: str | None,
    ) -> JsonObject:
        """The transcript record; with it, resume rebuilds exactly the head this compaction built."""
        record: JsonObject = {
            "type": "compaction",
            "summary": result.summary,
            "reinjected": [*state],
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


def _plan(messages: Sequence[Message], cut: int) -> str:
    """What a compaction at ``cut`` will drop and keep, in words."""
    turns = sum(1 for message in messages[:cut] if is_turn_start(message))
    dropped = f"the {cut} oldest messages" + (f" ({turns} user turn{'s' if turns != 1 else ''})" if turns else "")
    return f"{dropped} will be summarised, the {len(messages) - cut} newest kept verbatim"


def _shrunk_note(found: list[Attached]) -> str:
    what = "tool output" if all(a.kind == "tool output" for a in found) else "text"
    count = f"{len(found)} {what}s" if len(found) > 1 else f"a {what}"
    paths = ", ".join(a.path for a in found[:3]) + (", …" if len(found) > 3 else "")
    return (
        f"The context was too large for the model: set aside {count} (the model gets the start and end and "
        f"can read the rest from {paths})."
    )


def _is_memory_text(block: Block) -> bool:
    """A block the memory layer added: per-turn retrieved cards (an injected item of their kind),
    or the profile in the system prompt (memagent's own text there, told by its opening words)."""
    value = item(block)
    if isinstance(value, Injected):
        return value.kind in MEMORY_KINDS
    return isinstance(value, Text) and legacy_kind(value.text) in MEMORY_KINDS


__all__ = ["CompactingContext", "CompactionResult"]
