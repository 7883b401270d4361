"""Renderers of the agent's event stream: one for print mode, one for the interactive REPL.

Both consume the same :mod:`memagent.events`. Print mode writes only the final answer to
stdout and one compact line per tool call to stderr; the REPL shows a spinner until the first
token, streams the answer as Markdown, and shows each tool call as a header plus a preview;
while a tool runs, its newest output lines and the elapsed time are shown live. Every piece of
text that comes from the model, a tool or a file passes through :func:`printable` first, so no
control sequence reaches the terminal.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

from memagent.events import (
    AgentEvent,
    AssistantText,
    Notice,
    ToolCallFinished,
    ToolCallStarted,
    ToolProgress,
    TurnEnded,
    WaitingForModel,
)
from memagent.ui.safe_text import printable

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.live import Live

PREVIEW_CHARS = 100
LIVE_OUTPUT_LINES = 5  # newest lines of a running tool's output shown in the REPL
LIVE_OUTPUT_KEEP_CHARS = 8_192
EXPAND_HINT = "/expand"
ERROR_PREVIEW_CHARS = 400
RED = "\x1b[31m"
DIM = "\x1b[2m"
RESET = "\x1b[0m"


# ------------------------------------------------------------------ pure formatting helpers


def one_line(text: str, limit: int = PREVIEW_CHARS) -> str:
    """Collapse whitespace runs, escape control characters, cut to ``limit`` with an ellipsis."""
    flat = printable(" ".join(text.split()), newlines=False)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def result_preview(content: str, limit: int = PREVIEW_CHARS, more_hint: str = "") -> str:
    """The first non-blank line of a tool result, cut short, plus how many lines were left out."""
    lines = [line for line in content.splitlines() if line.strip()]
    if not lines:
        return "(no output)"
    preview = one_line(lines[0], limit)
    if len(lines) > 1:
        preview += f" (+{len(lines) - 1} {'line' if len(lines) == 2 else 'lines'}{more_hint})"
    return preview


def call_label(name: str, summary: str) -> str:
    """``bash(pytest -q)`` — the tool name and its key argument, as shown to the user."""
    return printable(f"{name}({summary})" if summary else name, newlines=False)


def output_tail(text: str, lines: int = LIVE_OUTPUT_LINES) -> list[str]:
    """The last ``lines`` non-blank lines of a running command's output, as the screen shows it.

    A carriage return overwrites its line (progress bars), so only what follows the last one
    is kept; control characters are escaped."""
    shown = []
    for line in text.split("\n")[-lines * 4 :]:  # not splitlines(): a lone \r is no line break here
        line = line.rsplit("\r", 1)[-1]
        if line.strip():
            shown.append(printable(line.expandtabs(4), newlines=False))
    return shown[-lines:]


# ------------------------------------------------------------------------------- print mode


@dataclass
class TurnOutcome:
    """What a finished turn means for the process: the answer and the exit status."""

    stop_reason: str = ""
    final_text: str = ""
    error: str | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None


@dataclass
class PrintRenderer:
    """Print mode: tool activity on ``err`` (one line per call), the final answer kept for stdout.

    Errors are red only when ``color`` is true (stderr is a terminal); otherwise plain text, so a
    log file or a pipe never receives escape codes.
    """

    err: IO[str]
    color: bool = False
    outcome: TurnOutcome = field(default_factory=TurnOutcome)
    _calls: dict[str, ToolCallStarted] = field(default_factory=dict)

    def handle(self, event: AgentEvent) -> None:
        if isinstance(event, ToolCallStarted):
            self._calls[event.id] = event
        elif isinstance(event, ToolCallFinished):
            self._tool_line(event)
        elif isinstance(event, Notice):
            self._write(f"memagent: {event.text}", error=event.level == "error")
        elif isinstance(event, TurnEnded):
            self.outcome = TurnOutcome(event.stop_reason, event.final_text, event.error)

    def _tool_line(self, event: ToolCallFinished) -> None:
        started = self._calls.pop(event.id, None)
        label = call_label(event.name, started.summary if started else "")
        marker = "✗" if event.is_error else "→"
        # an error is the reason a tool did not run: shown whole (its first line), never cut
        limit = ERROR_PREVIEW_CHARS if event.is_error else PREVIEW_CHARS
        self._write(f"• {label} {marker} {result_preview(event.content, limit)}", error=event.is_error)

    def _write(self, line: str, error: bool = False) -> None:
        line = printable(line)
        if self.color and error:
            line = f"{RED}{line}{RESET}"
        self.err.write(line + "\n")
        self.err.flush()


# ------------------------------------------------------------------------------------ REPL


class TailView:
    """A renderable showing only the last lines of another one that fit on the screen.

    While an answer streams, a long Markdown text would overflow the live area; showing its
    tail keeps the newest text visible. The whole answer is printed once it is complete.
    """

    def __init__(self, renderable: RenderableType, reserve: int = 2):
        self.renderable = renderable
        self.reserve = reserve

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment

        lines = console.render_lines(self.renderable, options, pad=False)
        keep = max(1, console.size.height - self.reserve)
        for line in lines[-keep:]:
            yield from line
            yield Segment.line()


class ToolActivity:
    """A running tool: a spinner, its label, the elapsed time and its newest output lines.

    Output arrives in pieces (:class:`ToolProgress`); only the last few KiB are kept. The
    elapsed time is computed when drawn, so the live display's refresh keeps it moving."""

    def __init__(self, label: str, started: float | None = None):
        from rich.spinner import Spinner

        self.label = label
        self.started = time.monotonic() if started is None else started
        self.spinner = Spinner("dots", style="cyan")
        self._pieces: deque[str] = deque()
        self._size = 0

    def append(self, text: str) -> None:
        self._pieces.append(text)
        self._size += len(text)
        while self._size > LIVE_OUTPUT_KEEP_CHARS and len(self._pieces) > 1:
            self._size -= len(self._pieces.popleft())

    @property
    def text(self) -> str:
        return "".join(self._pieces)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.table import Table
        from rich.text import Text

        elapsed = time.monotonic() - self.started
        head = Table.grid(padding=(0, 1))
        head.add_row(self.spinner, Text(f"Running {self.label}… {elapsed:.0f}s", style="cyan"))
        yield head
        for line in output_tail(self.text):
            yield Text(f"  {line}", style="dim", no_wrap=True, overflow="ellipsis")


class RunningTools:
    """The tool calls running at the same time (subagents side by side), drawn one under the other."""

    def __init__(self) -> None:
        self.calls: dict[str, ToolActivity] = {}
        self.labels: dict[str, str] = {}  # "task(find alpha)", by call id

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.calls.values()


class StreamingMarkdown:
    """Text that grows as deltas arrive, parsed as Markdown only when it is drawn.

    Rich parses Markdown when a ``Markdown`` object is built, so building one per delta would
    cost O(n²) over an answer; here appending is O(1) and parsing happens at most at the live
    display's refresh rate.
    """

    def __init__(self) -> None:
        self.parts: list[str] = []

    def append(self, text: str) -> None:
        self.parts.append(text)

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.markdown import Markdown

        yield TailView(Markdown(printable(self.text)))


@dataclass
class ReplRenderer:
    """Rich rendering of one turn at a time; ``pause()`` clears any live area (before a prompt)."""

    console: Console
    refresh_per_second: int = 12
    _answer: StreamingMarkdown = field(default_factory=StreamingMarkdown)
    _live: Live | None = None
    _live_kind: str = ""  # "spinner" | "stream"
    _spinner_text: str = ""
    _paused_spinner: str = ""
    _activity: ToolActivity | None = None
    # calls started and not finished, by id: more than one when calls run at the same time
    _running: RunningTools = field(default_factory=RunningTools)
    _last_header: str = ""  # the call whose header is the newest line printed
    outcome: TurnOutcome = field(default_factory=TurnOutcome)

    # -------------------------------------------------------------- event dispatch

    def handle(self, event: AgentEvent) -> None:
        if isinstance(event, WaitingForModel):
            self._flush_text()
            self._spinner("Thinking…")
        elif isinstance(event, AssistantText):
            self._stream(event.text)
        elif isinstance(event, ToolCallStarted):
            self._flush_text()
            self._tool_header(event)
            self._tool_activity(event)
        elif isinstance(event, ToolProgress):
            self._tool_output(event)
        elif isinstance(event, ToolCallFinished):
            self._stop_live()
            self._running.calls.pop(event.id, None)
            self._activity = None
            self._tool_result(event)
            if self._running.calls:  # the others still run
                self._start_live(self._running, "spinner")
        elif isinstance(event, Notice):
            self._flush_text()
            style = {"error": "red", "warning": "yellow"}.get(event.level, "dim")
            self._print_line(event.text, style)
        elif isinstance(event, TurnEnded):
            self._flush_text()
            self.outcome = TurnOutcome(event.stop_reason, event.final_text, event.error)
            if event.stop_reason == "cancelled":
                self.show_cancelled()
            elif event.error:
                self._print_line(f"error: {event.error}", "bold red")

    def pause(self) -> None:
        """Stop the spinner or live stream (streamed text so far is printed, not lost)."""
        self._paused_spinner = self._spinner_text if self._live_kind == "spinner" else ""
        if self._live_kind == "stream":
            self._flush_text()
        else:
            self._stop_live()

    def resume(self) -> None:
        """Bring back the spinner that :meth:`pause` stopped (after an approval prompt)."""
        message, self._paused_spinner = self._paused_spinner, ""
        if message and self._live is None:
            if self._activity is not None:  # the tool starts after the approval prompt: time it from now
                self._activity.started = time.monotonic()
                self._start_live(self._running, "spinner")
                self._spinner_text = message
            else:
                self._spinner(message)

    def finish(self) -> None:
        """End of a turn, however it ended: leave the terminal in a clean state."""
        self._paused_spinner = ""
        self._running.calls.clear()
        self._running.labels.clear()
        self._flush_text()
        self._stop_live()

    def show_cancelled(self) -> None:
        self._print_line("cancelled", "yellow")

    # ----------------------------------------------------------------- internals

    def _spinner(self, message: str) -> None:
        from rich.spinner import Spinner

        self._stop_live()
        self._spinner_text = message
        self._start_live(Spinner("dots", text=message, style="cyan"), "spinner")

    def _tool_activity(self, event: ToolCallStarted) -> None:
        self._stop_live()
        label = event.name if not self._running.calls else call_label(event.name, event.summary)
        self._activity = self._running.calls[event.id] = ToolActivity(label)
        self._start_live(self._running, "spinner")
        self._spinner_text = f"Running {event.name}…"

    def _tool_output(self, event: ToolProgress) -> None:
        activity = self._running.calls.get(event.id)
        if activity is None:  # e.g. after an approval prompt paused the display
            activity = self._running.calls[event.id] = ToolActivity(event.name, time.monotonic() - event.elapsed)
        activity.append(event.text)
        if self._live is None:
            self._start_live(self._running, "spinner")

    def _stream(self, piece: str) -> None:
        self._answer.append(piece)
        if self._live_kind != "stream":
            self._stop_live()
            self._start_live(self._answer, "stream")

    def _start_live(self, renderable: RenderableType, kind: str) -> None:
        from rich.live import Live

        self._live = Live(
            renderable,
            console=self.console,
            refresh_per_second=self.refresh_per_second,
            transient=True,
        )
        self._live_kind = kind
        self._live.start()

    def _stop_live(self) -> None:
        live, self._live, self._live_kind, self._spinner_text = self._live, None, "", ""
        if live is not None:
            live.stop()

    def _flush_text(self) -> None:
        """Replace the live tail with the complete Markdown answer in the scrollback."""
        from rich.markdown import Markdown

        self._stop_live()
        text = self._answer.text.strip()
        self._answer = StreamingMarkdown()
        if text:
            self.console.print(Markdown(printable(text)))

    def _tool_header(self, event: ToolCallStarted) -> None:
        from rich.text import Text

        line = Text("● ", style="cyan")
        line.append(printable(event.name, newlines=False), style="bold")
        if event.summary:
            line.append(f"({printable(event.summary, newlines=False)})")
        self.console.print(line)
        self._last_header = event.id
        self._running.labels[event.id] = call_label(event.name, event.summary)

    def _tool_result(self, event: ToolCallFinished) -> None:
        from rich.text import Text

        style = "red" if event.is_error else "dim"
        width = max(20, min(PREVIEW_CHARS, self.console.width - 6))
        preview = result_preview(event.content, width, more_hint=f", {EXPAND_HINT}")
        # under another call's header (calls that ran at the same time): say whose result it is
        label = self._running.labels.pop(event.id, event.name)
        whose = "" if self._last_header == event.id else f"{label}: "
        self._last_header = "-"  # a result is the newest line now
        line = Text(f"  ⎿ {whose}{preview}", style=style, no_wrap=True, overflow="ellipsis")
        self.console.print(line)

    def _print_line(self, text: str, style: str) -> None:
        from rich.text import Text

        self.console.print(Text(printable(text), style=style))


__all__ = [
    "PrintRenderer",
    "ReplRenderer",
    "StreamingMarkdown",
    "TailView",
    "ToolActivity",
    "TurnOutcome",
    "call_label",
    "one_line",
    "output_tail",
    "result_preview",
]
