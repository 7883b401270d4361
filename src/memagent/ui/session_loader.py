"""Opening the session off the prompt's thread: the REPL shows its prompt at once while
:class:`SessionLoader` builds the session (and warms the model client) in the background."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memagent.session import Session

EXIT_FAILURE = 1


class SessionLoader:
    """Runs ``factory()`` in a background thread; :meth:`get` waits for the session.

    ``on_done(loader)`` is called in the background thread once the session is open (or failed).
    """

    def __init__(
        self,
        factory: Callable[[], Session],
        on_done: Callable[[SessionLoader], None] | None = None,
        preload: Callable[[], None] | None = None,
    ):
        self._factory = factory
        self._on_done = on_done
        self._preload = preload  # runs on its own thread, in parallel with factory()
        self._thread = threading.Thread(target=self._run, name="memagent-session", daemon=True)
        self.session: Session | None = None
        self.error: BaseException | None = None
        self.seconds: float | None = None
        self.started = False

    def start(self) -> SessionLoader:
        """Start the thread (once; later calls do nothing)."""
        if not self.started:
            self.started = True
            if self._preload is not None:
                threading.Thread(target=self._run_preload, name="memagent-preload", daemon=True).start()
            self._thread.start()
        return self

    def _run_preload(self) -> None:
        try:
            assert self._preload is not None
            self._preload()
        except Exception:  # only a head start: the session opens (and reports) on its own
            pass

    def _run(self) -> None:
        started = time.perf_counter()
        try:
            self.session = self._factory()
        except BaseException as exc:  # reported to the main thread by get()
            self.error = exc
        self.seconds = time.perf_counter() - started
        if self._on_done is not None:
            self._on_done(self)

    @property
    def done(self) -> bool:
        return not self._thread.is_alive() and (self.session is not None or self.error is not None)

    def wait(self) -> None:
        """Join with a timeout loop so Ctrl-C stays responsive while waiting."""
        while self._thread.is_alive():
            self._thread.join(0.05)

    def get(self) -> Session:
        self.wait()
        if self.error is not None:
            raise self.error
        assert self.session is not None
        return self.session


class SessionFailed(Exception):
    """The background session could not be opened; carries the exit code."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def exit_code_of(error: BaseException | None) -> int:
    """The exit code a failure to open the session ends the chat with."""
    from memagent.runtime import SetupError

    return error.code if isinstance(error, SetupError) else EXIT_FAILURE


def warm_up(session: Session) -> Session:
    """Import the model SDK and build its client now, in the loader thread, not on the first turn."""
    try:
        session.prepare_model()
    except Exception as exc:  # the first turn reports a real problem with the client
        session.warnings.append(f"model client not ready: {exc}")
    return session
