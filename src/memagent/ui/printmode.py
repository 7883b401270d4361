"""Print mode (``memagent -p``): one turn, the answer on stdout, tool activity on stderr."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING, Iterator

from memagent.events import AgentEvent
from memagent.ui.render import PrintRenderer
from memagent.ui.safe_text import printable

if TYPE_CHECKING:
    from memagent.agent.loop import Agent

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130


def consume_turn(agent: "Agent", events: Iterator[AgentEvent], handle) -> bool:
    """Feed every event of a turn to ``handle``; True when the user interrupted it.

    A KeyboardInterrupt inside the loop ends the turn as ``cancelled`` by itself. One that
    lands in the renderer (between two events) is handled here: the generator is closed and
    the history repaired, so the next request is still valid.
    """
    try:
        for event in events:
            handle(event)
    except KeyboardInterrupt:
        close = getattr(events, "close", None)
        if close is not None:
            close()
        agent.repair_after_interrupt()
        return True
    return False


def report_warnings(warnings: list[str], start: int, err: IO[str]) -> int:
    """Write the session warnings added since ``start``; returns the new count."""
    for warning in warnings[start:]:
        err.write(f"memagent: warning: {warning}\n")
    err.flush()
    return len(warnings)


OUTPUT_FORMATS = ("text", "json", "stream-json")


def run_print(
    session,
    prompt: str,
    out: IO[str],
    err: IO[str],
    *,
    color: bool = False,
    output_format: str = "text",
    max_turns: int | None = None,
) -> int:
    """Run one turn to completion and return the exit code (0 ok, 1 error, 130 interrupted).

    ``text`` prints the answer; ``json`` one result object; ``stream-json`` one JSON object per
    line, from ``init`` to ``result`` (see :mod:`memagent.ui.headless`). ``max_turns`` caps the
    model calls of the turn; reaching it is an error (exit 1)."""
    if max_turns is not None:
        session.agent.config.max_rounds = max_turns
    if output_format != "text":
        from memagent.ui.headless import run_headless

        return run_headless(session, prompt, out, err, output_format=output_format, color=color)
    renderer = PrintRenderer(err=err, color=color)
    seen = report_warnings(session.warnings, 0, err)
    interrupted = consume_turn(session.agent, session.agent.run_turn(prompt), renderer.handle)
    report_warnings(session.warnings, seen, err)
    outcome = renderer.outcome
    if interrupted or outcome.stop_reason == "cancelled":
        err.write("memagent: interrupted\n")
        return EXIT_INTERRUPTED
    if outcome.failed:
        err.write(f"memagent: {printable(' '.join(str(outcome.error).split()))}\n")
        return EXIT_FAILURE
    # never the model's raw control sequences (OSC 52 sets the clipboard, OSC 8 hides links): a
    # pipe often ends in a terminal too; --output-format json carries the exact text as data
    answer = printable(outcome.final_text.strip())
    if answer:
        out.write(answer + "\n")
        out.flush()
    return EXIT_OK


__all__ = ["OUTPUT_FORMATS", "consume_turn", "report_warnings", "run_print"]
