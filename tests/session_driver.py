"""A small in-process front end: drives a Session through the protocol only (ops in, events out)."""

from __future__ import annotations

from collections.abc import Callable

from memagent.protocol import AnswerApproval, ApprovalRequested, Op, SessionEvent, Submit

TIMEOUT = 60.0  # seconds for any one event (a loaded machine)


def drive(
    session, op: Op, answer: Callable[[ApprovalRequested], str] = lambda request: "deny", timeout: float = TIMEOUT
) -> list[SessionEvent]:
    """Send ``op`` and read every event until the session is idle; each approval question is
    answered with ``answer(request)`` before the next event is read."""
    session.submit(op)
    seen: list[SessionEvent] = []
    for event in session.events(timeout):
        seen.append(event)
        if isinstance(event, ApprovalRequested):
            session.submit(AnswerApproval(event.id, answer(event)))  # type: ignore[arg-type]
    return seen


def turn(session, text: str, answer: Callable[[ApprovalRequested], str] = lambda request: "deny") -> list[SessionEvent]:
    return drive(session, Submit(text), answer)


def of(kind, events: list[SessionEvent]) -> list:
    return [event for event in events if isinstance(event, kind)]
