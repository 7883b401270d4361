"""Machine-readable print mode: ``--output-format json`` and ``--output-format stream-json``.

``json`` writes one object to stdout when the turn is over; ``stream-json`` writes one JSON
object per line as the turn runs. Every object has a ``type``:

- ``init`` (first): ``session_id``, ``model``, ``cwd``, ``tools`` (the tool names);
- ``assistant``: ``text``, a piece of the answer, complete up to the next tool call;
- ``tool_use``: ``id``, ``name``, ``input``;
- ``tool_result``: ``tool_use_id``, ``name``, ``content``, ``is_error``;
- ``notice``: ``level`` (info, warning, error) and ``text`` (session warnings, compaction,
  retries, …);
- ``result`` (last, and the only object of ``json``): ``subtype`` (``success``,
  ``error_max_turns``, ``error_during_execution``, ``error_interrupted``), ``is_error``,
  ``result`` (the final answer), ``error`` (one line, or null), ``stop_reason``,
  ``session_id``, ``model``, ``num_turns`` (model calls in the turn), ``duration_ms``,
  ``usage`` (``input_tokens``, ``output_tokens``, ``cache_read_input_tokens``,
  ``cache_creation_input_tokens``, summed over every model call of the session, summaries and
  memory extraction included) and ``total_cost_usd`` (an estimate from the price table in
  :mod:`memagent.pricing`; null for a model with no known price).

Warnings and errors also go to stderr as one line each; the exit code is 0 on success, 1 when
the turn ended in an error (including ``--max-turns`` reached), 130 when interrupted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import IO, Any

from memagent.events import (
    AgentEvent,
    AssistantText,
    Notice,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    WaitingForModel,
)
from memagent.ui.printmode import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, consume_turn, report_warnings
from memagent.ui.safe_text import json_line, printable


@dataclass
class HeadlessRecorder:
    """Turns the event stream into JSON objects; ``emit`` receives each (stream-json)."""

    emit: Any = None  # Callable[[dict], None] | None
    rounds: int = 0
    final_text: str = ""
    stop_reason: str = ""
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    _text: list[str] = field(default_factory=list)

    def handle(self, event: AgentEvent) -> None:
        if isinstance(event, WaitingForModel):
            self.rounds += 1
        elif isinstance(event, AssistantText):
            self._text.append(event.text)
        elif isinstance(event, ToolCallStarted):
            self._flush_text()
            self._send({"type": "tool_use", "id": event.id, "name": event.name, "input": event.input})
        elif isinstance(event, ToolCallFinished):
            self._send({"type": "tool_result", "tool_use_id": event.id, "name": event.name,
                        "content": event.content, "is_error": event.is_error})
        elif isinstance(event, Notice):
            self._flush_text()
            self._send({"type": "notice", "level": event.level, "text": event.text})
        elif isinstance(event, TurnEnded):
            self._flush_text()
            self.final_text, self.stop_reason, self.error = event.final_text, event.stop_reason, event.error
            self.usage = dict(event.usage)

    def _flush_text(self) -> None:
        text = "".join(self._text)
        self._text.clear()
        if text.strip():
            self._send({"type": "assistant", "text": text})

    def _send(self, obj: dict[str, Any]) -> None:
        if self.emit is not None:
            self.emit(obj)


def init_object(session: Any) -> dict[str, Any]:
    agent = session.agent
    tools = agent.tools.names() if hasattr(agent.tools, "names") else []
    return {
        "type": "init",
        "session_id": getattr(session, "session_id", ""),
        "model": agent.config.model or getattr(agent.model, "name", ""),
        "cwd": str(getattr(agent.tool_context, "root", "")),
        "tools": tools,
    }


def _usage_and_cost(session: Any, recorder: HeadlessRecorder) -> tuple[dict[str, int], float | None]:
    from memagent.llm.metered import meter_of
    from memagent.pricing import cost_usd

    metered = meter_of(session.agent.model)
    if metered is None:  # an unmetered model: the last response's usage is all there is
        usage = {k: int(recorder.usage.get(k, 0)) for k in
                 ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")}
        return usage, cost_usd(session.agent.config.model or "", usage)
    meter = metered.snapshot()
    usage = {
        "input_tokens": meter.input_tokens,
        "output_tokens": meter.output_tokens,
        "cache_read_input_tokens": meter.cache_read_tokens,
        "cache_creation_input_tokens": meter.cache_write_tokens,
    }
    return usage, (round(meter.cost, 6) if meter.cost is not None else None)


def result_object(session: Any, recorder: HeadlessRecorder, interrupted: bool, duration_ms: int) -> dict[str, Any]:
    usage, cost = _usage_and_cost(session, recorder)
    if interrupted or recorder.stop_reason == "cancelled":
        subtype, error = "error_interrupted", recorder.error or "interrupted"
    elif recorder.stop_reason == "max_rounds":
        subtype, error = "error_max_turns", recorder.error
    elif recorder.error is not None or not recorder.stop_reason:
        subtype, error = "error_during_execution", recorder.error or "the turn did not finish"
    else:
        subtype, error = "success", None
    return {
        "type": "result",
        "subtype": subtype,
        "is_error": subtype != "success",
        "result": recorder.final_text.strip(),
        "error": " ".join(error.split()) if error else None,
        "stop_reason": recorder.stop_reason or None,
        "session_id": getattr(session, "session_id", ""),
        "model": session.agent.config.model or getattr(session.agent.model, "name", ""),
        "num_turns": recorder.rounds,
        "duration_ms": duration_ms,
        "usage": usage,
        "total_cost_usd": cost,
    }


def _warnings(warnings: list[str], start: int, err: IO[str], recorder: HeadlessRecorder) -> int:
    """Session warnings go to stderr, and into the stream as ``notice`` events."""
    for warning in warnings[start:]:
        recorder.handle(Notice(warning, "warning"))
    return report_warnings(warnings, start, err)


def run_headless(session: Any, prompt: str, out: IO[str], err: IO[str], *, output_format: str, color: bool = False) -> int:
    """Run one turn, writing ``json`` or ``stream-json`` to ``out``; returns the exit code."""
    started = time.monotonic()

    def emit(obj: dict[str, Any]) -> None:
        out.write(json_line(obj) + "\n")  # exact JSON, no raw control sequence
        out.flush()

    streaming = output_format == "stream-json"
    recorder = HeadlessRecorder(emit=emit if streaming else None)
    if streaming:
        emit(init_object(session))
    seen = _warnings(session.warnings, 0, err, recorder)
    interrupted = consume_turn(session.agent, session.agent.run_turn(prompt), recorder.handle)
    _warnings(session.warnings, seen, err, recorder)
    result = result_object(session, recorder, interrupted, int((time.monotonic() - started) * 1000))
    emit(result)
    if result["subtype"] == "error_interrupted":
        err.write("memagent: interrupted\n")
        return EXIT_INTERRUPTED
    if result["is_error"]:
        err.write(f"memagent: {printable(str(result['error']))}\n")
        return EXIT_FAILURE
    return EXIT_OK


__all__ = ["HeadlessRecorder", "init_object", "result_object", "run_headless"]
