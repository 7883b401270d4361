"""The REPL's idle timer: one call after the prompt has waited ``seconds`` for input.

:meth:`IdleTimer.waiting` starts the count when the prompt is shown and :meth:`IdleTimer.active`
stops it when a line arrives, so the callback runs at most once per idle period, on a daemon
thread, never during a turn. Memory uses it to learn from a conversation the user left
(``memory_idle_seconds``; see ``MemoryFeature.on_idle``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memagent.session import Session
    from memagent.ui.session_loader import SessionLoader


class IdleTimer:
    def __init__(self, seconds: float, on_idle: Callable[[], object]) -> None:
        self.seconds = seconds
        self.on_idle = on_idle
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def waiting(self) -> None:
        """The prompt is waiting for input: the idle period starts (0 seconds: never fires)."""
        self.active()
        if self.seconds <= 0:
            return
        timer = threading.Timer(self.seconds, self._fire)
        timer.daemon = True
        timer.name = "memagent-idle"
        with self._lock:
            self._timer = timer
        timer.start()

    def active(self) -> None:
        """Input arrived (or the REPL closes): the idle period ends without firing again."""
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _fire(self) -> None:
        with self._lock:
            self._timer = None
        try:
            self.on_idle()
        except Exception:  # the user is away: nothing to tell, and nothing may break the prompt
            pass


def idle_timer_for(session: Session) -> IdleTimer:
    """The timer of an open session: its memory learns after ``memory_idle_seconds`` (a session
    without memory gets a timer that never fires)."""
    feature = session.memory_feature
    if feature is None:
        return IdleTimer(0, lambda: None)
    return IdleTimer(session.settings.memory_idle_seconds, feature.on_idle)


class IdleWatch:
    """The REPL's side: the session's timer, made once the session is open, around each prompt."""

    def __init__(self) -> None:
        self.timer: IdleTimer | None = None

    @contextmanager
    def prompt(self, loader: SessionLoader | None) -> Iterator[None]:
        """Time one wait at the prompt (``loader``: the REPL's SessionLoader)."""
        if self.timer is None and loader is not None and loader.done and loader.error is None:
            self.timer = idle_timer_for(loader.get())
        if self.timer is not None:
            self.timer.waiting()
        try:
            yield
        finally:
            self.stop()

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.active()


__all__ = ["IdleTimer", "IdleWatch", "idle_timer_for"]
