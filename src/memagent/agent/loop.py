"""The agent loop: a generator of events over (conversation, model, tools).

``Agent.run_turn(text)`` yields :mod:`memagent.events` until the model ends the turn. It
never prints and never imports a terminal or SDK library; renderers consume the events. Every
request it sends keeps the Messages API's invariants (roles alternate starting with the user;
each ``tool_use`` is answered by a ``tool_result`` first thing in the next message; no empty
content): a cancelled turn (KeyboardInterrupt anywhere inside), a tool crash, or a model error
all leave a history the API accepts.

Capabilities plug in as :class:`~memagent.agent.feature.Feature` objects; the loop calls their
hooks in order and knows nothing of what they do.
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from memagent.agent.feature import Feature, ToolCall, TurnInput
from memagent.agent.live_model import stream_live
from memagent.agent.live_tools import run_with_progress
from memagent.agent.parallel import run_concurrently
from memagent.context.conversation import Conversation
from memagent.context.history import INTERRUPTED_REQUEST, INTERRUPTED_TOOL, tool_use_ids
from memagent.context.policy import ContextPolicy, PassThroughContext
from memagent.decoding import scrub
from memagent.events import (
    AgentEvent,
    AssistantText,
    ModelAnswered,
    Notice,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
    WaitingForModel,
)
from memagent.jsontypes import JsonObject, JsonValue, json_str
from memagent.llm import items
from memagent.llm.items import Injected
from memagent.llm.protocol import ChatModel
from memagent.llm.types import (
    Abort,
    Block,
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    PromptTooLongError,
    ResponseComplete,
    TextDelta,
    text_block,
    tool_result_block,
)
from memagent.markers import Marker
from memagent.models import MEMAGENT_MAX_TOKENS
from memagent.permissions import Gate, HookVerdict, Policy
from memagent.tools.base import BoundCall, RegisteredTool, ToolContext, ToolOutcome, ToolRegistry


class Approval(Enum):
    ALLOW = "allow"  # this call
    ALWAYS = "always"  # this call, from now on (the gate saves a rule for exactly it)
    DENY = "deny"


class Approver(Protocol):
    """Asks the user about one call; ``reason`` is the gate's: why this call asks."""

    def __call__(self, tool: RegisteredTool, tool_input: JsonObject, summary: str, reason: str) -> Approval: ...


def deny_all(tool: RegisteredTool, tool_input: JsonObject, summary: str, reason: str = "") -> Approval:
    return Approval.DENY


# Who is asking, while an approver runs: "" for the session's own agent, a subagent's name
# otherwise (the approval prompt says which subagent asks).
ASKER: ContextVar[str] = ContextVar("memagent_asker", default="")


DENIED_MESSAGE = (
    "The user did not approve this {name} call, so it was not run. "
    "Do not retry it unchanged; ask the user or choose another approach."
)
HOOK_BLOCKED = "The call was blocked before it ran: {reason}"
RULE_DENIED = "Refused: {reason}. The call was not run; do not retry it, choose another approach or ask the user."
NON_INTERACTIVE_DENIED = (
    "{name} needs the user's approval ({reason}), and this non-interactive run has no one to ask ({hint}). "
    "Do not retry it; continue without it or explain what is needed."
)
RERUN_WITH_YES = "re-run memagent with --yes to allow tools"
NOT_EVEN_YES = "--yes does not approve this; an allow rule naming it does"


@dataclass
class AgentConfig:
    model: str | None = None
    max_tokens: int = MEMAGENT_MAX_TOKENS  # the settings give the model's own (config.response_tokens)
    max_rounds: int = 100  # model calls in one turn before the loop stops itself
    max_pause_continuations: int = 5
    max_stop_continuations: int = 8  # times Stop hooks may send the model back to work in one turn
    max_too_long_retries: int = 4  # "prompt is too long" answers survived in one turn


@dataclass
class Agent:
    model: ChatModel
    tools: ToolRegistry
    tool_context: ToolContext
    system: list[Block]
    conversation: Conversation = field(default_factory=Conversation)
    context: ContextPolicy = field(default_factory=PassThroughContext)
    approver: Approver = deny_all
    auto_approve: bool = False  # shorthand at construction: a default-mode gate becomes bypassPermissions
    non_interactive: bool = False
    features: Sequence[Feature] = ()
    config: AgentConfig = field(default_factory=AgentConfig)
    # The one gate every call goes through (default: default mode, no rules, this project).
    permissions: Gate | None = None
    name: str = ""  # a subagent's name ("" for the session's own agent)
    _partial_text: list[str] = field(default_factory=list)
    _partial_outcomes: dict[str, ToolOutcome] = field(default_factory=dict)  # interrupted calls' output so far
    _storage_problem: str | None = None
    # set from another thread to stop the running turn (a parent agent cancelling its subagent,
    # a parallel call group interrupted); cleared when the turn ends
    _cancel: threading.Event = field(default_factory=threading.Event)
    _live_call: Abort | None = None  # the model call streaming now: a cancel closes its stream

    def __post_init__(self) -> None:
        if self.permissions is None:
            self.permissions = Gate(Policy(root=self.tool_context.root))
        if self.auto_approve and self.permissions.mode == "default":
            self.permissions.policy = self.permissions.policy.with_mode("bypassPermissions")

    @property
    def gate(self) -> Gate:
        assert self.permissions is not None  # set in __post_init__
        return self.permissions

    # ------------------------------------------------------------------ public

    @property
    def turns(self) -> int:
        """User turns opened in this session (counted by the conversation, the one owner)."""
        return self.conversation.user_turns

    def run_turn(self, user_text: str) -> Iterator[AgentEvent]:
        """Run one user turn to its end. KeyboardInterrupt inside ends it as ``cancelled``."""
        yield TurnStarted(self.conversation.user_turns + 1)
        refused = self._refused_prompt(user_text)
        if refused:
            yield TurnEnded("refused", error=f"prompt blocked: {refused}")
            return
        try:
            for feature in self.features:
                feature.turn_started(self.conversation.turn_number + 1)
            yield from self._add_user_message(scrub(user_text))
            yield from self._rounds()
        except KeyboardInterrupt:
            self.repair_after_interrupt()
            yield TurnEnded("cancelled", error="cancelled by the user")
        finally:
            self._cancel.clear()
            for feature in self.features:
                feature.after_turn(self.conversation)

    def cancel(self) -> None:
        """Stop the running turn from another thread, as Ctrl-C would (it ends as ``cancelled``).
        A model response still streaming is closed at once, not at its next chunk."""
        self._cancel.set()
        live = self._live_call
        if live is not None:
            live.set()

    def forget_cancel(self) -> None:
        """Drop a cancel that came after the turn it was meant for had ended (between the turn's
        last event and its runner going idle): it must not stop the next turn."""
        self._cancel.clear()

    def _check_cancel(self) -> None:
        if self._cancel.is_set():
            raise KeyboardInterrupt

    def repair_after_interrupt(self) -> None:
        """Make the history valid again after a cancel that happened anywhere in a turn.

        Partial streamed text is kept as an assistant message (the model should know what it
        had said); tool calls without results get error results. Safe to call twice.
        """
        partial = "".join(self._partial_text).strip()
        self._partial_text.clear()
        if partial and self.conversation.last_role == "user" and not self._pending_tool_ids():
            self.conversation.append("assistant", [text_block(partial + "\n\n[interrupted by the user]")])
        pending = self._pending_tool_ids()
        if pending:
            self.conversation.append(
                "user", [tool_result_block(tid, INTERRUPTED_TOOL, is_error=True) for tid in pending]
            )

    def rewind(
        self,
        record: JsonObject,
        messages: list[Message],
        ids: list[str],
        turns_before: int,
        records: Sequence[JsonObject],
    ) -> None:
        """Take the conversation back to the start of an earlier turn (between turns only).

        ``record`` is the transcript's ``rewind`` record; ``messages``/``ids`` the history rebuilt
        from the records still in effect (``records``), from which each feature restores its own
        state; the context policy forgets what it knew of the history that is gone."""
        self.conversation.rewind(record, messages, ids, turns_before)
        self.context.rewound()
        for feature in self.features:
            feature.restore(records)

    def run_tool(self, name: str, tool_input: JsonObject, call_id: str) -> Generator[AgentEvent, None, ToolOutcome]:
        """Run one call the user asked for (a slash command's ``!`cmd``` line) on the path the
        model's calls take: the features' checks, the permission gate and approval, then the tool.
        Yields its events and returns the outcome; nothing is added to the conversation."""
        return (yield from self._run_one({"id": call_id, "name": name, "input": tool_input}))

    def tool_schemas(self) -> list[JsonObject]:
        return self.tools.schemas()

    def build_request(self) -> ModelRequest:
        return ModelRequest(
            system=self.system,
            # a snapshot: the conversation keeps growing after the request is sent
            messages=list(self.context.view(self.conversation)),
            tools=self.tool_schemas(),
            max_tokens=self.config.max_tokens,
            model=self.config.model,
        )

    # ----------------------------------------------------------------- rounds

    def _refused_prompt(self, user_text: str) -> str | None:
        """The first feature's reason to refuse this prompt (a blocking prompt hook), else None."""
        for feature in self.features:
            reason = feature.check_prompt(user_text)
            if reason:
                return reason
        return None

    def _add_user_message(self, user_text: str) -> Iterator[AgentEvent]:
        """The user's words, then each feature's per-turn context (memories, continuity): in the
        newest message, never the system prompt, so the cached prefix stays byte-stable."""
        blocks: list[Block] = []
        if self.conversation.last_role == "user" and not self._pending_tool_ids():
            blocks.append(items.injected(Marker.INTERRUPTED_REQUEST, INTERRUPTED_REQUEST))
        blocks.append(text_block(user_text))
        turn = TurnInput(user_text, tuple(self.conversation.messages))
        for feature in self.features:
            extra = feature.turn_context(turn)
            if extra and extra.text:
                blocks.append(items.block(extra))
        yield from self._append_user(blocks)

    def _append_user(self, blocks: list[Block]) -> Iterator[AgentEvent]:
        """Append a user message as the context policy lets it be sent (a text too large for the
        context goes as a preview and a file); the transcript keeps it whole."""
        fitted, notes = self.context.fit(blocks)
        self.conversation.append("user", fitted, whole=blocks if notes else None)
        for note in notes:
            yield Notice(note, "info")

    def _rounds(self) -> Iterator[AgentEvent]:
        pauses = 0
        continued = 0
        too_long = 0
        for _ in range(self.config.max_rounds):
            self._check_cancel()
            halted = self._halted()
            if halted:
                yield Notice(halted, "warning")
                yield TurnEnded("halted", error=None)
                return
            yield from self._storage_notice()
            yield from self.context.before_request(self.conversation)
            request = self.build_request()
            yield WaitingForModel()
            try:
                response = yield from self._stream(request)
            except PromptTooLongError as exc:
                too_long += 1
                if too_long > self.config.max_too_long_retries or not (yield from self._recover(too_long)):
                    yield TurnEnded("error", error=f"{exc} (the context could not be made smaller)")
                    return
                continue
            except ModelError as exc:
                yield TurnEnded("error", error=str(exc))
                return
            self.context.observe(response.usage, request.messages)
            for feature in self.features:
                feature.after_response(response)
            yield ModelAnswered(
                list(response.content), response.stop_reason, response.model, response.id, response.usage.to_dict()
            )
            content = _clean_content(response.content)
            if content:
                self.conversation.append("assistant", content, usage=response.usage.to_dict())
            stop = response.stop_reason
            if response.tool_uses() and stop in ("tool_use", "max_tokens"):
                yield from self._run_tools(response.tool_uses())
                continue
            if stop == "pause_turn" and content and pauses < self.config.max_pause_continuations:
                pauses += 1
                continue
            if stop == "end_turn" and continued < self.config.max_stop_continuations:
                more = self._continuation(response.text())
                if more:
                    continued += 1
                    if not content:
                        self.conversation.append("assistant", [text_block("(no answer)")])
                    self.conversation.append("user", [items.block(more)])
                    continue
            yield from self._finish(response, stop, content)
            return
        yield TurnEnded("max_rounds", error=f"stopped after {self.config.max_rounds} model calls in one turn")

    def _halted(self) -> str | None:
        """The first feature's reason to end the turn now (a hook's ``continue: false``)."""
        for feature in self.features:
            reason = feature.halt_reason()
            if reason:
                return reason
        return None

    def _continuation(self, text: str) -> Injected | None:
        """The first feature's reason not to stop yet (a ``Stop`` hook that blocks)."""
        for feature in self.features:
            more = feature.continue_turn(text)
            if more and more.text:
                return more
        return None

    def _recover(self, attempt: int) -> Generator[AgentEvent, None, bool]:
        """After "prompt is too long": the context policy makes the context smaller; True when it did."""
        yield Notice("The request was too long for the model; making the context smaller and retrying.", "warning")
        changed = yield from self.context.recover_too_long(self.conversation, attempt)
        return bool(changed)

    def _finish(self, response: ModelResponse, stop: str, content: list[Block]) -> Iterator[AgentEvent]:
        if stop == "max_tokens":
            yield Notice("The answer was cut off at the output-token limit (max_tokens).", "warning")
        elif stop == "refusal":
            yield Notice("The model declined to continue with this request.", "warning")
        if not content and self.conversation.last_role == "user":
            # Keep alternation valid for the next turn: an empty answer is still an answer.
            self.conversation.append("assistant", [text_block("(no answer)")])
        yield from self._storage_notice()
        yield TurnEnded(stop, final_text=response.text(), usage=response.usage.to_dict())

    def _stream(self, request: ModelRequest) -> Generator[AgentEvent, None, ModelResponse]:
        """Yield text as it arrives; return the complete response (via StopIteration value).
        A cancel closes the stream at once (see :mod:`memagent.agent.live_model`); the turn then
        ends as ``cancelled`` (KeyboardInterrupt), never as a model error."""
        self._partial_text.clear()
        response: ModelResponse | None = None
        abort = self._live_call = Abort()
        if self._cancel.is_set():
            abort.set()
        try:
            for event in stream_live(self.model, request, abort):
                if isinstance(event, TextDelta):  # text that arrived before a cancel is kept
                    self._partial_text.append(event.text)
                    yield AssistantText(event.text)
                elif isinstance(event, ResponseComplete):
                    response = event.response
                self._check_cancel()
        except ModelError:
            self._check_cancel()  # the stream was closed by a cancel
            raise
        finally:
            self._live_call = None
        self._partial_text.clear()
        if response is None:
            raise ModelError("the model stream ended without a complete response")
        return response

    # ------------------------------------------------------------------ tools

    def _run_tools(self, calls: list[Block]) -> Iterator[AgentEvent]:
        """Run a response's tool calls; neighbours that may run together (``Tool.concurrent``)
        run at once. The results go back in the order of the calls."""
        outcomes: dict[str, ToolOutcome] = {}
        names = [json_str(call.get("name")) for call in calls]
        try:
            for group in self._call_groups(calls):
                self._check_cancel()
                if len(group) == 1:
                    outcomes[json_str(group[0].get("id"))] = yield from self._run_one(group[0])
                    continue
                runs = [lambda call=call: self._run_one(call) for call in group]
                finished = yield from run_concurrently(runs, self._cancel)
                for call, outcome in zip(group, finished):
                    outcomes[json_str(call.get("id"))] = outcome or ToolOutcome(INTERRUPTED_TOOL, is_error=True)
        except (KeyboardInterrupt, GeneratorExit):  # Ctrl-C in the tool, or in the renderer
            for call_id, partial in self._partial_outcomes.items():  # what an interrupted call had done
                if call_id not in outcomes and partial.content:
                    outcomes[call_id] = ToolOutcome(partial.content, is_error=True, images=partial.images)
            self._partial_outcomes.clear()
            results = self._results(calls, outcomes)
            fitted, notes = self.context.fit(results)
            self.conversation.append("user", fitted, whole=results if notes else None)
            raise
        blocks = self._results(calls, outcomes)
        for feature in self.features:
            extra = feature.after_tools(names)
            if extra and extra.text:
                blocks.append(items.block(extra))
        yield from self._append_user(blocks)

    def _call_groups(self, calls: list[Block]) -> list[list[Block]]:
        """Consecutive calls of concurrent tools form one group; every other call is alone."""
        groups: list[tuple[bool, list[Block]]] = []
        for call in calls:
            found = self.tools.get(json_str(call.get("name")))
            concurrent = found is not None and found.concurrent
            if concurrent and groups and groups[-1][0]:
                groups[-1][1].append(call)
            else:
                groups.append((concurrent, [call]))
        return [group for _, group in groups]

    @staticmethod
    def _results(calls: list[Block], outcomes: dict[str, ToolOutcome]) -> list[Block]:
        """One tool_result per call, in call order; a call without an outcome was interrupted."""
        results = []
        for call in calls:
            call_id = json_str(call.get("id"))
            outcome = outcomes.get(call_id) or ToolOutcome(INTERRUPTED_TOOL, is_error=True)
            results.append(tool_result_block(call_id, outcome.content, outcome.is_error, outcome.images))
        return results

    def _run_one(self, call: Block) -> Generator[AgentEvent, None, ToolOutcome]:
        call_id, name = json_str(call.get("id")), json_str(call.get("name"))
        given: JsonValue = call.get("input") or {}
        raw = given if isinstance(given, dict) else {}  # not an object: refused by validation below
        found = self.tools.get(name)
        summary = found.summary(raw) if found else ""
        yield ToolCallStarted(call_id, name, raw, summary)
        parsed = self.tools.parse(name, given)
        refused = False
        if isinstance(parsed, ToolOutcome):
            outcome = parsed
        else:
            tool, value = parsed
            outcome, refused = yield from self._guarded_run(ToolCall(call_id, name, raw, tool), tool, summary, value)
        yield ToolCallFinished(call_id, name, outcome.content, outcome.is_error, refused)
        return outcome

    def _guarded_run(
        self, call: ToolCall, tool: RegisteredTool, summary: str, value: BoundCall
    ) -> Generator[AgentEvent, None, tuple[ToolOutcome, bool]]:
        """Pre-tool hooks speak first (they may refuse, ask or approve); then the gate decides,
        asking the user when it says so; then the tool runs, its live output yielded as
        ToolProgress. Features see every outcome that ran. Returns the outcome and whether the
        call was refused (it never ran)."""
        hook = self._hook_verdict(call)
        refusal = self._approve(tool, call.input, summary, value, hook)
        if refusal is not None:
            return refusal, True
        if tool.streams_output:
            outcome = yield from run_with_progress(
                self.tools,
                tool,
                value,
                self.tool_context,
                call.id,
                self._cancel,
                on_partial=lambda done: self._partial_outcomes.update({call.id: done}),
            )
        else:
            outcome = self.tools.execute(tool, value, self.tool_context)
        for feature in self.features:
            feature.after_tool(call, outcome)
        return outcome, False

    def _hook_verdict(self, call: ToolCall) -> HookVerdict | None:
        """The features' word on a call (a PreToolUse hook): the first refusal, else an ask, else
        an approval. A plain string from ``check_tool`` is a refusal."""
        found: HookVerdict | None = None
        for feature in self.features:
            said = feature.check_tool(call)
            if not said:
                continue
            verdict = HookVerdict("deny", said) if isinstance(said, str) else said
            if verdict.action == "deny":
                return verdict
            if found is None or (verdict.action == "ask" and found.action == "allow"):
                found = verdict
        return found

    def _approve(
        self, tool: RegisteredTool, raw: JsonObject, summary: str, value: BoundCall, hook: HookVerdict | None = None
    ) -> ToolOutcome | None:
        """None when the call may run; otherwise the error outcome to return to the model.

        The gate decides; the loop only carries out "ask": the approver when there is someone
        to ask, a refusal naming the reason when there is not. "Always" goes back to the gate,
        which approves exactly this call from then on."""
        declaration = value.declare()
        verdict = self.gate.decide(tool.name, declaration, hook, raw)
        if verdict.action == "deny":
            message = HOOK_BLOCKED if verdict.by_hook else RULE_DENIED
            return ToolOutcome(message.format(reason=verdict.reason), is_error=True)
        if verdict.action == "allow":
            return None
        if self.non_interactive:
            hint = NOT_EVEN_YES if self.gate.mode == "bypassPermissions" else RERUN_WITH_YES
            return ToolOutcome(
                NON_INTERACTIVE_DENIED.format(name=tool.name, reason=verdict.reason, hint=hint), is_error=True
            )
        asking = ASKER.set(self.name)
        try:
            answer = self.approver(tool, raw, summary, verdict.reason)
        finally:
            ASKER.reset(asking)
        if answer is Approval.ALWAYS:
            self.gate.always(tool.name, declaration, raw)
            return None
        if answer is Approval.ALLOW:
            return None
        return ToolOutcome(DENIED_MESSAGE.format(name=tool.name), is_error=True)

    def _storage_notice(self) -> Iterator[AgentEvent]:
        """Say once when the transcript stops being written, and once when it recovers."""
        recorder = self.conversation.recorder
        problem = getattr(recorder, "failure", None)
        if problem and problem != self._storage_problem:
            self._storage_problem = problem
            yield Notice(f"{problem}. The conversation is kept in memory and written as soon as possible.", "error")
        elif problem is None and self._storage_problem is not None:
            self._storage_problem = None
            yield Notice("The transcript is being written again; nothing was lost.", "info")

    def _pending_tool_ids(self) -> list[str]:
        """tool_use ids of the last assistant message that have no result yet."""
        messages = self.conversation.messages
        if not messages or messages[-1]["role"] != "assistant":
            return []
        return tool_use_ids(messages[-1])


def _clean_content(content: list[Block]) -> list[Block]:
    """Drop empty text blocks (the API rejects them) and keep everything else as sent."""
    return [b for b in content if not items.is_blank_text(b)]


__all__ = [
    "ASKER",
    "Agent",
    "AgentConfig",
    "Approval",
    "Approver",
    "deny_all",
]
