"""Machine-readable print mode: ``--output-format json`` and ``--output-format stream-json``.

The objects are the ones Claude Code's ``claude -p`` writes (built in
:mod:`memagent.ui.headless_shapes`), so scripts and the ``claude-agent-sdk`` parser written for
it read memagent's output unchanged. ``json`` writes only the ``result`` object, when the turn
is over; ``stream-json`` writes one object per line as the turn runs: ``system``/``init``, then
``assistant`` lines (the model's messages, one per content block), ``user`` lines (each tool's
result), ``system``/``notice`` lines (memagent's warnings, compaction, retries) and last the
``result``.

The ``result``: ``subtype`` (``success``, ``error_max_turns``, ``error_during_execution``),
``is_error``, ``result`` (the final answer; after an interruption, what was produced),
``errors`` (on an error), ``session_id`` (the logical session: the same across ``-c``/``-r``),
``num_turns`` (model calls in the turn), ``duration_ms``, ``duration_api_ms`` (time spent
waiting for the model), ``usage`` (tokens of every model call of the turn, summaries and memory
extraction included), ``modelUsage`` (the agent's own calls per model), ``total_cost_usd``
(the session's cost so far, from :mod:`memagent.pricing`; null when a model's price is
unknown), ``permission_denials`` (``tool_name``, ``tool_use_id``, ``tool_input`` of each call
that was refused), ``terminal_reason``, ``stop_reason``, and memagent's ``model`` and ``error``.

Warnings and errors also go to stderr as one line each. Exit codes: 0 success, 1 the turn ended
in an error (including ``--max-turns`` reached), 128 + the signal number when interrupted
(130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), with a final ``result`` that says so.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

from memagent.events import (
    AgentEvent,
    AssistantText,
    ModelAnswered,
    Notice,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    WaitingForModel,
)
from memagent.llm.types import ModelResponse, Usage
from memagent.ui import headless_shapes as shapes
from memagent.ui.printmode import EXIT_FAILURE, EXIT_OK, StopSignal, follow_turn, report_warnings
from memagent.ui.safe_text import json_line, printable
from memagent.ui.slash import submit_line

if TYPE_CHECKING:
    from memagent.pricing import UsageMeter
    from memagent.session import Session


@dataclass
class TurnRecord:
    """What one turn produced, as its events report it."""

    started: float = field(default_factory=time.monotonic)
    rounds: int = 0
    api_ms: float = 0.0
    waiting_since: float | None = None
    responses: list[ModelResponse] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)
    running_tool: str | None = None
    calls: dict[str, ToolCallStarted] = field(default_factory=dict)  # the turn's tool calls by id
    denials: list[dict[str, object]] = field(default_factory=list)
    stop_reason: str = ""
    final_text: str = ""
    error: str | None = None

    def model_answered(self) -> None:
        if self.waiting_since is not None:
            self.api_ms += (time.monotonic() - self.waiting_since) * 1000
            self.waiting_since = None

    @property
    def produced(self) -> str:
        """The answer so far: the final text, else what streamed since the newest complete
        response, else the newest response's text."""
        if self.final_text.strip():
            return self.final_text.strip()
        partial = "".join(self.partial).strip()
        if partial:
            return partial
        return self.responses[-1].text().strip() if self.responses else ""


def _one_line(text: str | None) -> str | None:
    return " ".join(text.split()) if text else None


class HeadlessRun:
    """One headless session: any number of turns, each from an ``init`` line to a ``result``
    (stream-json writes every line; json only the results)."""

    def __init__(
        self, session: Session, out: IO[str], err: IO[str], *, streaming: bool, stop: StopSignal | None = None
    ):
        self.session, self.out, self.err = session, out, err
        self.streaming = streaming
        self.stop = stop or StopSignal()
        self.turn = TurnRecord()
        self._warnings_seen = 0
        self._writing = threading.Lock()  # whole lines: a stdin reader answers control requests too

    # ------------------------------------------------------------------ output

    @property
    def session_id(self) -> str:
        return self.session.logical_session_id or self.session.session_id

    def write(self, obj: dict[str, object]) -> None:
        line = json_line(obj) + "\n"  # exact JSON, no raw control sequence
        with self._writing:
            self.out.write(line)
            self.out.flush()

    def _stream(self, obj: dict[str, object]) -> None:
        if self.streaming:
            self.write(obj)

    def _report_warnings(self) -> None:
        warnings = self.session.warnings
        for warning in warnings[self._warnings_seen :]:
            self._stream(shapes.notice("warning", warning, self.session_id))
        self._warnings_seen = report_warnings(warnings, self._warnings_seen, self.err)

    # ------------------------------------------------------------------ one turn

    def single(self, prompt: str) -> int:
        """Run one turn (``-p PROMPT``) and return the exit code."""
        return self.exit_code(self.send(prompt))

    def send(self, prompt: str) -> dict[str, object]:
        """Send one line (a message, or a prompt command) to the session as a turn, read it to its
        end and write its ``result``; returns that object. Each turn opens with the ``init`` line
        and the session warnings not reported yet."""
        self._stream(init_message(self.session, self.session_id))
        self._report_warnings()
        self.turn = TurnRecord()
        usage_before = _meter_snapshot(self.session)
        submit_line(self.session, prompt)
        interrupted = follow_turn(self.session, self.handle)
        self.turn.model_answered()
        self._report_warnings()
        result = self._result(interrupted, usage_before)
        self.write(result)
        self._tell_stderr(result)
        return result

    def handle(self, event: AgentEvent) -> None:
        turn = self.turn
        if isinstance(event, WaitingForModel):
            turn.rounds += 1
            turn.waiting_since = time.monotonic()
        elif isinstance(event, AssistantText):
            turn.partial.append(event.text)
        elif isinstance(event, ModelAnswered):
            self._on_response(
                ModelResponse(event.content, event.stop_reason, Usage.from_dict(event.usage), event.model, event.id)
            )
        elif isinstance(event, ToolCallStarted):
            turn.running_tool = event.id
            turn.calls[event.id] = event
        elif isinstance(event, ToolCallFinished):
            turn.running_tool = None
            self._tool_finished(event)
        elif isinstance(event, Notice):
            self._stream(shapes.notice(event.level, event.text, self.session_id))
        elif isinstance(event, TurnEnded):
            turn.model_answered()
            turn.stop_reason, turn.final_text, turn.error = event.stop_reason, event.final_text, event.error

    def _on_response(self, response: ModelResponse) -> None:
        self.turn.model_answered()
        self.turn.responses.append(response)
        self.turn.partial.clear()
        for line in shapes.assistant_messages(response, self.session_id):
            self._stream(line)

    def _tool_finished(self, event: ToolCallFinished) -> None:
        started = self.turn.calls.get(event.id)
        if event.refused:  # a rule, the mode, a hook or no one to approve: it never ran
            tool_input = started.input if started is not None else {}
            self.turn.denials.append({"tool_name": event.name, "tool_use_id": event.id, "tool_input": tool_input})
        self._stream(shapes.tool_result_message(event.id, event.content, event.is_error, self.session_id))

    # ------------------------------------------------------------------ the result

    def _outcome(self, interrupted: bool) -> tuple[str, str | None, str]:
        """(subtype, error, terminal_reason) of the turn just run."""
        turn = self.turn
        if interrupted or turn.stop_reason == "cancelled":
            return (
                "error_during_execution",
                self.stop.reason,
                ("aborted_tools" if turn.running_tool else "aborted_streaming"),
            )
        if turn.stop_reason == "max_rounds":
            return "error_max_turns", turn.error, "max_turns"
        if turn.error is not None or not turn.stop_reason:
            reason = shapes.TERMINAL_REASONS.get(turn.stop_reason, "model_error")
            return "error_during_execution", turn.error or "the turn did not finish", reason
        return "success", None, "completed"

    def _result(self, interrupted: bool, usage_before: UsageMeter | None) -> dict[str, object]:
        from memagent.pricing import cost_usd

        subtype, error, terminal = self._outcome(interrupted)
        turn = self.turn
        usage, cost = _turn_usage_and_cost(self.session, turn, usage_before)
        return shapes.result_message(
            subtype=subtype,
            session_id=self.session_id,
            result=turn.produced,
            error=_one_line(error),
            stop_reason=(turn.responses[-1].stop_reason if turn.responses else None),
            terminal_reason=terminal,
            num_turns=turn.rounds,
            duration_ms=int((time.monotonic() - turn.started) * 1000),
            duration_api_ms=int(turn.api_ms),
            usage=usage,
            total_cost_usd=cost,
            model=_model_name(self.session),
            model_usage=shapes.model_usage(turn.responses, cost_usd),
            permission_denials=turn.denials,
        )

    def _tell_stderr(self, result: dict[str, object]) -> None:
        if result["is_error"]:
            self.err.write(f"memagent: {printable(str(result['error']))}\n")
            self.err.flush()

    def exit_code(self, result: dict[str, object]) -> int:
        if result.get("terminal_reason") in ("aborted_tools", "aborted_streaming"):
            return self.stop.exit_code
        return EXIT_FAILURE if result["is_error"] else EXIT_OK


def _api_key_source() -> str:
    from memagent.config import credentials_from_env

    creds = credentials_from_env()
    if creds.api_key:
        return "ANTHROPIC_API_KEY"
    return "ANTHROPIC_AUTH_TOKEN" if creds.auth_token else "none"


def _mcp_servers(session: Session) -> list[dict[str, str]]:
    from memagent.features.mcp_client import McpClientFeature

    feature = session.feature(McpClientFeature)
    statuses = feature.manager.statuses() if feature is not None else []
    return [{"name": status.name, "status": shapes.MCP_STATES.get(status.status, status.status)} for status in statuses]


def init_message(session: Session, session_id: str) -> dict[str, object]:
    """The ``system``/``init`` line: what this session runs with."""
    from memagent import __version__
    from memagent.features.skills import SkillsFeature
    from memagent.ui.slash import session_commands

    feature = session.feature(SkillsFeature)
    skills = [skill.name for skill in feature.index.skills] if feature is not None else []
    status = session.status()
    return shapes.system_init(
        session_id=session_id,
        cwd=str(session.paths.root),
        model=status.model,
        tools=session.tool_names(),
        mcp_servers=_mcp_servers(session),
        permission_mode=status.permission_mode,
        slash_commands=session_commands(session).names(),
        skills=skills,
        api_key_source=_api_key_source(),
        version=__version__,
    )


def _model_name(session: Session) -> str:
    return session.status().model


def _meter_snapshot(session: Session) -> UsageMeter | None:
    return session.usage_totals()


def _turn_usage_and_cost(
    session: Session, turn: TurnRecord, before: UsageMeter | None
) -> tuple[dict[str, int], float | None]:
    """The turn's tokens (every metered call, else the agent's own responses) and the session's
    cost so far; the cost is None when a model's price is unknown."""
    from memagent.pricing import cost_usd, price_for

    after = _meter_snapshot(session)
    if after is None or before is None:
        usage = shapes.zero_usage()
        cost: float | None = 0.0
        for response in turn.responses:
            for key, value in response.usage.to_dict().items():
                usage[key] += value
            one = cost_usd(response.model or _model_name(session), response.usage)
            cost = None if one is None or cost is None else cost + one
        calls = len(turn.responses)
    else:
        usage = {
            "input_tokens": after.input_tokens - before.input_tokens,
            "cache_creation_input_tokens": after.cache_write_tokens - before.cache_write_tokens,
            "cache_read_input_tokens": after.cache_read_tokens - before.cache_read_tokens,
            "output_tokens": after.output_tokens - before.output_tokens,
        }
        cost, calls = after.cost, after.calls
    if calls == 0 and price_for(_model_name(session)) is None:
        cost = None  # nothing was spent, but a price that is not known is not zero either
    return usage, (round(cost, 6) if cost is not None else None)


__all__ = ["HeadlessRun", "TurnRecord", "init_message"]
