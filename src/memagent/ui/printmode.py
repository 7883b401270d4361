"""Print mode (``memagent -p``): one turn, the answer on stdout, tool activity on stderr.

Signals: Ctrl-C (SIGINT), and SIGTERM or SIGHUP while :func:`signals_interrupt` is active, end the
turn the same way: the history is repaired, what was produced so far is written (the text of the
newest answer in text mode, a final ``result`` object in json modes), the reason goes to stderr
as one line, and the exit code is 128 + the signal number (130, 143, 129).
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

from memagent.events import AgentEvent, AssistantText, WaitingForModel
from memagent.protocol import AnswerApproval, ApprovalRequested, Cancel, OpCompleted, OpRejected
from memagent.ui.render import PrintRenderer
from memagent.ui.safe_text import printable
from memagent.ui.slash import submit_line

if TYPE_CHECKING:
    from memagent.session import Session

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130
TERMINATION_SIGNALS = ("SIGTERM", "SIGHUP")


@dataclass
class StopSignal:
    """Which signal interrupted the run: set by :func:`signals_interrupt`; None means SIGINT
    (Python's own KeyboardInterrupt) or nothing yet."""

    number: int | None = None

    @property
    def name(self) -> str:
        return signal.Signals(self.number).name if self.number is not None else "SIGINT"

    @property
    def exit_code(self) -> int:
        return 128 + (self.number if self.number is not None else signal.SIGINT)

    @property
    def reason(self) -> str:
        """``interrupted`` (Ctrl-C), ``interrupted by SIGTERM``, ``interrupted by SIGHUP``."""
        return "interrupted" if self.number is None else f"interrupted by {self.name}"


@contextmanager
def signals_interrupt() -> Iterator[StopSignal]:
    """While inside, SIGTERM and SIGHUP interrupt like Ctrl-C (a KeyboardInterrupt in the main
    thread), and the yielded :class:`StopSignal` says which one came. A second signal during the
    clean-up gets the default action (the process ends at once)."""
    caught = StopSignal()

    def handler(signum: int, frame: object) -> None:
        for name in TERMINATION_SIGNALS:
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        caught.number = signum
        raise KeyboardInterrupt

    previous = {}
    for name in TERMINATION_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None:
            previous[number] = signal.signal(number, handler)
    try:
        yield caught
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def follow_turn(session: Session, handle: Callable[[AgentEvent], None]) -> bool:
    """Feed every event of the running turn to ``handle`` until the session is idle; True when
    the run was interrupted.

    A KeyboardInterrupt (Ctrl-C, or SIGTERM/SIGHUP inside :func:`signals_interrupt`) sends
    ``Cancel``: the session closes what runs (a streaming response, a command) and repairs the
    history, and the rest of the turn, its ``TurnEnded("cancelled")`` included, is still read. A
    question the turn asks is answered "deny": print mode has no one to ask (a session that can
    ask, ``--permission-prompt-tool``, has an approver of its own).
    """
    interrupted = False
    while True:
        try:
            for event in session.events():
                if isinstance(event, ApprovalRequested):
                    session.submit(AnswerApproval(event.id, "deny"))
                elif not isinstance(event, (OpCompleted, OpRejected)):
                    handle(event)
            return interrupted
        except KeyboardInterrupt:
            interrupted = True
            session.submit(Cancel())


def report_warnings(warnings: list[str], start: int, err: IO[str]) -> int:
    """Write the session warnings added since ``start``; returns the new count."""
    for warning in warnings[start:]:
        err.write(f"memagent: warning: {warning}\n")
    err.flush()
    return len(warnings)


OUTPUT_FORMATS = ("text", "json", "stream-json")
INPUT_FORMATS = ("text", "stream-json")


@dataclass
class NewestAnswer:
    """The text streamed in the newest model response: what an interrupted run still prints."""

    pieces: list[str] = field(default_factory=list)

    def handle(self, event: AgentEvent) -> None:
        if isinstance(event, WaitingForModel):
            self.pieces.clear()
        elif isinstance(event, AssistantText):
            self.pieces.append(event.text)

    @property
    def text(self) -> str:
        return "".join(self.pieces)


def write_answer(out: IO[str], answer: str) -> None:
    """The one place text mode writes the model's answer to stdout. Never the model's raw control
    sequences (OSC 52 sets the clipboard, OSC 8 hides links): a pipe often ends in a terminal too;
    ``--output-format json`` carries the exact text as data."""
    answer = printable(answer.strip())
    if answer:
        out.write(answer + "\n")
        out.flush()


def run_print(
    session: Session,
    prompt: str,
    out: IO[str],
    err: IO[str],
    *,
    color: bool = False,
    output_format: str = "text",
    stop: StopSignal | None = None,
) -> int:
    """Run one turn to completion and return the exit code (0 ok, 1 error, 128 + n on a signal).

    ``text`` prints the answer; ``json`` one result object; ``stream-json`` one JSON object per
    line, from ``system``/``init`` to ``result`` (see :mod:`memagent.ui.headless`). Reaching the
    agent's cap on model calls (``--max-turns``) is an error (exit 1). ``stop`` names the signal
    that interrupted the run, if one did."""
    stop = stop or StopSignal()
    if output_format != "text":
        from memagent.ui.headless import HeadlessRun

        return HeadlessRun(session, out, err, streaming=output_format == "stream-json", stop=stop).single(prompt)
    renderer, newest = PrintRenderer(err=err, color=color), NewestAnswer()

    def handle(event: AgentEvent) -> None:
        newest.handle(event)
        renderer.handle(event)

    seen = report_warnings(session.warnings, 0, err)
    submit_line(session, prompt)
    interrupted = follow_turn(session, handle)
    report_warnings(session.warnings, seen, err)
    outcome = renderer.outcome
    if interrupted or outcome.stop_reason == "cancelled":
        write_answer(out, newest.text)
        err.write(f"memagent: {stop.reason}\n")
        return stop.exit_code
    if outcome.failed:
        err.write(f"memagent: {printable(' '.join(str(outcome.error).split()))}\n")
        return EXIT_FAILURE
    write_answer(out, outcome.final_text)
    return EXIT_OK


__all__ = [
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "INPUT_FORMATS",
    "NewestAnswer",
    "OUTPUT_FORMATS",
    "StopSignal",
    "follow_turn",
    "report_warnings",
    "run_print",
    "signals_interrupt",
    "write_answer",
]
