"""``--input-format stream-json``: the conversation arrives on stdin, one JSON object per line.

The lines Claude Code reads in this mode, and the Agent SDK writes:

- ``{"type": "user", "message": {"role": "user", "content": "..."}}`` — one user turn. The
  content is a string or a list of blocks; text blocks are joined (other blocks, e.g. images,
  are left out with a notice). Each turn writes its own ``result``; all turns are one session.
- ``{"type": "control_request", "request_id": "...", "request": {"subtype": ...}}`` —
  ``initialize`` and ``interrupt`` are answered with a ``control_response``; any other request
  gets an error response naming it. Lines are read while a turn runs, so an ``interrupt`` stops
  the running turn at once (its ``result`` says it was interrupted) and the next messages still
  run; between turns there is nothing to interrupt.
- ``keep_alive`` and ``control_response`` lines are ignored.

A line that is not JSON, or not one of these, is named on stderr and answered with an error
``result`` (so a driver waiting for one result per message is never left hanging); the next
lines still run. End of input ends the session. Exit code: 0 when every turn succeeded (or was
interrupted by the driver), 1 when a turn or an input line failed, 2 when stdin held no line at
all, 128 + n when a signal interrupted a turn (the run stops there).
"""

from __future__ import annotations

import json
import os
import queue
import threading
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

from memagent.jsontypes import JsonObject, JsonValue
from memagent.llm import items
from memagent.protocol import Cancel
from memagent.ui import headless_shapes as shapes
from memagent.ui.headless import HeadlessRun
from memagent.ui.printmode import EXIT_FAILURE, EXIT_OK, StopSignal

if TYPE_CHECKING:
    from memagent.session import Session

EXIT_USAGE = 2

IGNORED_TYPES = frozenset({"keep_alive", "control_response", "control_cancel_request"})


@dataclass(frozen=True)
class UserInput:
    text: str
    message: JsonObject
    uuid: str | None = None
    left_out: tuple[str, ...] = ()  # block types that were not text


@dataclass(frozen=True)
class ControlRequest:
    request_id: str
    subtype: str


@dataclass(frozen=True)
class Ignored:
    kind: str


@dataclass(frozen=True)
class BadLine:
    reason: str


InputItem = UserInput | ControlRequest | Ignored | BadLine


def _user_text(content: JsonValue) -> tuple[str, tuple[str, ...]] | None:
    if isinstance(content, str):
        return content, ()
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    others: list[str] = []
    for block in content:
        part = items.item(block) if isinstance(block, dict) else None
        if isinstance(part, (items.Text, items.Injected)):  # a caller's words, whatever it claims they are
            texts.append(part.text)
        else:
            others.append(items.wire_type(part) or "None" if part is not None else type(block).__name__)
    return "\n\n".join(texts), tuple(others)


def parse_line(raw: bytes) -> InputItem | None:
    """One stdin line as an input item (None for a blank line)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return BadLine(f"not UTF-8 text (byte {exc.start})")
    if not text.strip():
        return None
    try:
        data: JsonValue = json.loads(text)
    except json.JSONDecodeError as exc:
        return BadLine(f"not JSON: {exc.msg} (column {exc.colno})")
    kind = data.get("type") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(kind, str):
        return BadLine('not a message: a JSON object with a "type" is expected')
    if kind == "user":
        return _user_input(data)
    if kind == "control_request":
        request, request_id = data.get("request"), data.get("request_id")
        if not isinstance(request_id, str) or not isinstance(request, dict):
            return BadLine('a control_request needs "request_id" and a "request" object')
        return ControlRequest(request_id, str(request.get("subtype", "")))
    if kind in IGNORED_TYPES:
        return Ignored(kind)
    return BadLine(f'type {kind!r} is not an input message (use "user" or "control_request")')


def _user_input(data: JsonObject) -> InputItem:
    message = data.get("message")
    if not isinstance(message, dict) or message.get("role", "user") != "user":
        return BadLine('a user line needs "message": {"role": "user", "content": ...}')
    found = _user_text(message.get("content"))
    if found is None:
        return BadLine("message.content must be a string or a list of content blocks")
    text, others = found
    if not text.strip():
        return BadLine("the message has no text")
    line_uuid = data.get("uuid")
    if not isinstance(line_uuid, str):
        line_uuid = None
    return UserInput(text, message, line_uuid, others)


@dataclass
class StreamSession:
    """The turns of one stream-json run over a :class:`HeadlessRun`."""

    run: HeadlessRun
    err: IO[str]
    replay: bool = False
    failed: bool = False
    line_number: int = 0
    commands: list[dict[str, str]] = field(default_factory=list)
    interrupted: bool = False  # the driver interrupted the running turn (a control request)

    def bad_line(self, reason: str) -> None:
        """Name the problem on stderr and answer it with an error ``result``."""
        self.failed = True
        line = f"stdin line {self.line_number}: {reason}" if self.line_number else reason
        self.err.write(f"memagent: {line}\n")
        self.err.flush()
        self.run.write(shapes.setup_error_result(line, self.run.session_id))

    def answer_control(self, request: ControlRequest) -> None:
        if request.subtype == "initialize":
            self.run.write(
                shapes.control_success(
                    request.request_id,
                    {
                        "commands": self.commands,
                        "output_style": "default",
                        "available_output_styles": ["default"],
                        "models": [],
                        "pid": os.getpid(),
                    },
                )
            )
        elif request.subtype == "interrupt":
            self.interrupt(request)
        else:
            reason = f"memagent does not support the control request {request.subtype!r}"
            self.run.write(shapes.control_error(request.request_id, reason))

    def interrupt(self, request: ControlRequest) -> None:
        """Stop the running turn, answered at once from the reader thread (between turns the
        session rejects the cancel, and nothing happens)."""
        self.interrupted = True
        self.run.session.submit(Cancel())
        self.run.write(shapes.control_success(request.request_id))

    def user_turn(self, item: UserInput) -> dict[str, object]:
        if self.replay:
            self.run.write(shapes.replayed_user_message(item.message, self.run.session_id, item.uuid))
        if item.left_out:
            text = f"stdin line {self.line_number}: {', '.join(item.left_out)} blocks are not supported; sent the text only"
            self.run.write(shapes.notice("warning", text, self.run.session_id))
        self.interrupted = False
        result = self.run.send(item.text)
        if not self.interrupted:
            self.failed = self.failed or bool(result["is_error"])
        return result


def _custom_commands(session: Session) -> list[dict[str, str]]:
    from memagent.commands_md import discover_commands

    paths = session.paths

    return [
        {"name": c.name, "description": c.description, "argumentHint": c.argument_hint}
        for c in discover_commands(paths.root, paths.home).commands
    ]


def run_stream_input(
    session: Session,
    stdin: IO[bytes],
    out: IO[str],
    err: IO[str],
    *,
    stop: StopSignal | None = None,
    replay: bool = False,
) -> int:
    """Run a turn per user message read from ``stdin`` until it ends; returns the exit code."""
    stop = stop or StopSignal()
    run = HeadlessRun(session, out, err, streaming=True, stop=stop)
    stream = StreamSession(run, err, replay=replay, commands=_custom_commands(session))
    lines = _read_in_background(stdin, stream)
    try:
        while (numbered := lines.get()) is not None:
            stream.line_number, item = numbered
            if isinstance(item, BadLine):
                stream.bad_line(item.reason)
            elif isinstance(item, ControlRequest):
                stream.answer_control(item)
            elif isinstance(item, UserInput):
                result = stream.user_turn(item)
                aborted = result.get("terminal_reason") in ("aborted_tools", "aborted_streaming")
                if aborted and not stream.interrupted:
                    return stop.exit_code
    except KeyboardInterrupt:  # a signal while waiting for the next line: the turns so far stand
        err.write(f"memagent: {stop.reason}\n")
        return stop.exit_code
    if stream.line_number == 0:
        stream.bad_line("no message on stdin (--input-format stream-json reads one JSON message per line)")
        return EXIT_USAGE
    return EXIT_FAILURE if stream.failed else EXIT_OK


def _read_in_background(stdin: IO[bytes], stream: StreamSession) -> queue.Queue[tuple[int, InputItem] | None]:
    """Read and parse stdin on a daemon thread, so a line that comes while a turn runs is read
    then: an ``interrupt`` is acted on at once, everything else waits its turn in the queue
    (``None`` after the last line)."""
    lines: queue.Queue[tuple[int, InputItem] | None] = queue.Queue()

    def read() -> None:
        number = 0
        try:
            while raw := stdin.readline():
                number += 1
                item = parse_line(raw)
                if isinstance(item, ControlRequest) and item.subtype == "interrupt":
                    stream.interrupt(item)
                else:
                    lines.put((number, item if item is not None else Ignored("blank line")))
        except (OSError, ValueError):  # stdin closed under the reader: the end of input
            pass
        lines.put(None)

    threading.Thread(target=read, name="memagent-stdin", daemon=True).start()
    return lines


__all__ = ["BadLine", "ControlRequest", "Ignored", "UserInput", "parse_line", "run_stream_input"]
