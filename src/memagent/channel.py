"""The session's channel: turns run off the front end's thread, their events and the approval
questions they raise travel out through one queue, and answers come back as operations.

The loop asks its approver synchronously (a subagent may ask from its own thread). The channel's
approver turns that call into an :class:`~memagent.protocol.ApprovalRequested` event and waits
for the matching :class:`~memagent.protocol.AnswerApproval`. Asked while no channel turn runs
(a caller driving ``agent.run_turn`` itself), it refuses, as :func:`~memagent.agent.loop.deny_all`
does, since no one would answer.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future

from pydantic import ValidationError

from memagent.agent.loop import ASKER, Approval
from memagent.events import AgentEvent, Notice, TurnEnded
from memagent.jsontypes import JsonObject
from memagent.permissions import suggested_rule
from memagent.protocol import AnswerApproval, ApprovalRequested, SessionEvent
from memagent.tools.base import RegisteredTool

ANSWERS = {"allow": Approval.ALLOW, "always": Approval.ALWAYS, "deny": Approval.DENY}


class ChannelError(Exception):
    """An operation the channel cannot take now (a turn already runs, an unknown question)."""


class _Idle:
    """Put on the queue after a turn's last event."""


class Channel:
    """One session's event queue, its running turn and its open questions."""

    def __init__(self) -> None:
        self._queue: queue.Queue[SessionEvent | _Idle] = queue.Queue()
        self._busy = threading.Event()
        self._lock = threading.Lock()
        self._open: dict[str, Future[Approval]] = {}
        self._ids = itertools.count(1)
        self._worker: threading.Thread | None = None

    @property
    def busy(self) -> bool:
        return self._busy.is_set()

    def emit(self, event: SessionEvent) -> None:
        self._queue.put(event)

    def start(self, turn: Callable[[], Iterator[AgentEvent]], on_end: Callable[[], None] = lambda: None) -> None:
        """Run ``turn()`` in a worker thread, its events onto the queue; ``on_end()`` runs once
        it is over, before the channel is idle (no :meth:`cancel` can come between). ChannelError
        when a turn is already running."""
        with self._lock:
            if self._busy.is_set():
                raise ChannelError("a turn is already running (cancel it first)")
            self._busy.set()
        self._worker = threading.Thread(target=self._run, args=(turn, on_end), name="memagent-turn", daemon=True)
        self._worker.start()

    def _run(self, turn: Callable[[], Iterator[AgentEvent]], on_end: Callable[[], None]) -> None:
        try:
            for event in turn():
                self._queue.put(event)
        except Exception as exc:  # the front end hears of it as the turn's end, never a dead thread
            text = " ".join(str(exc).split()) or type(exc).__name__
            self._queue.put(Notice(f"the turn failed: {text}", "error"))
            self._queue.put(TurnEnded("error", error=text))
        finally:
            with self._lock:
                on_end()
                self._busy.clear()
            self._queue.put(_Idle())

    def cancel(self, stop: Callable[[], None]) -> None:
        """Stop the running turn with ``stop()`` and answer its open questions "deny";
        ChannelError when no turn runs (a cancel never reaches a turn after the one it meant)."""
        with self._lock:
            if not self._busy.is_set():
                raise ChannelError("no turn is running")
            stop()
        self.deny_open()

    def events(self, timeout: float | None = None) -> Iterator[SessionEvent]:
        """What the session emitted, until it is idle (no turn running and nothing left to read).
        An :class:`ApprovalRequested` must be answered before the turn goes on. ``timeout``:
        seconds to wait for any one event of a running turn (TimeoutError after that)."""
        while True:
            if not self._busy.is_set():
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    return
            else:
                try:
                    item = self._queue.get(timeout=timeout)
                except queue.Empty:
                    raise TimeoutError(f"no event from the running turn within {timeout} s") from None
            if not isinstance(item, _Idle):
                yield item

    def approver(self, tool: RegisteredTool, tool_input: JsonObject, summary: str, reason: str = "") -> Approval:
        """The loop's approver: an event out, the answer back (deny outside a channel turn)."""
        if not self._busy.is_set():
            return Approval.DENY
        request_id = f"approval-{next(self._ids)}"
        answer: Future[Approval] = Future()
        with self._lock:
            self._open[request_id] = answer
        rule = _always_rule(tool, tool_input)
        self._queue.put(ApprovalRequested(request_id, tool.name, summary, reason, dict(tool_input), ASKER.get(), rule))
        try:
            return answer.result()
        finally:
            with self._lock:
                self._open.pop(request_id, None)

    def answer(self, op: AnswerApproval) -> None:
        """Resolve the open question ``op.id``; ChannelError for an unknown id or decision."""
        decision = ANSWERS.get(op.decision)
        if decision is None:
            raise ChannelError(f"unknown decision {op.decision!r}; use one of: {', '.join(ANSWERS)}")
        with self._lock:
            waiting = self._open.pop(op.id, None)
        if waiting is None:
            raise ChannelError(f"no approval {op.id!r} is waiting for an answer")
        waiting.set_result(decision)

    def deny_open(self) -> None:
        """Answer every open question "deny" (a cancel must not leave the turn waiting)."""
        with self._lock:
            waiting, self._open = list(self._open.values()), {}
        for future in waiting:
            if not future.done():
                future.set_result(Approval.DENY)

    def join(self, timeout: float | None = None) -> None:
        worker = self._worker
        if worker is not None:
            worker.join(timeout)


def _always_rule(tool: RegisteredTool, tool_input: JsonObject) -> str | None:
    """The rule an "always" answer would save for this call (None when none can name it)."""
    try:
        return suggested_rule(tool.name, tool.bind(tool_input).declare())
    except (ValidationError, ValueError, TypeError):
        return None


__all__ = ["ANSWERS", "Channel", "ChannelError"]
