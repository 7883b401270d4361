"""Keys while a turn runs: Esc interrupts it like Ctrl-C; anything else typed is kept.

While the agent works nothing reads the terminal, so an Esc would only reach the next prompt.
:class:`TurnKeys` puts the terminal in cbreak mode (no echo, no line buffering; Ctrl-C still
sends SIGINT) and reads it on a thread. A lone Esc sends SIGINT to the main thread, which ends
the turn exactly as Ctrl-C does. Other keys are kept as type-ahead: whole lines are handed
back to be run after the turn (in order), the unfinished rest pre-fills the next prompt. Escape
sequences (arrow keys, paste markers) are dropped; pasted text is kept.

``pause()`` / ``resume()`` stop reading while something else owns the keyboard (the approval
prompt). Terminal-only; the REPL uses it only when stdin is a real terminal.
"""

from __future__ import annotations

import os
import select
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

ESC = 0x1B
ESC_WAIT = 0.05  # seconds: an Esc followed by nothing within this is the Esc key
POLL = 0.05
PASTE_START = b"[200~"
PASTE_END = b"\x1b[201~"


def interrupt_main_thread() -> None:
    """Deliver SIGINT to the main thread (a blocking call there is woken up, as with Ctrl-C)."""
    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)


@dataclass
class TypeAhead:
    """Keys typed during a turn: complete lines, and the unfinished rest."""

    pending: str = ""
    eof: bool = False  # Ctrl-D was pressed: quit once the turn is over

    def feed(self, text: str) -> None:
        if "\x04" in text:
            self.eof = True
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        self.pending += "".join(ch for ch in text if ch in "\n\t" or ch >= " ")

    def take_lines(self) -> tuple[list[str], str]:
        """The complete lines typed so far, and the unfinished rest; empties the buffer."""
        *lines, rest = self.pending.split("\n")
        self.pending = ""
        return [line for line in lines if line.strip()], rest


def split_keys(data: bytes, more: Callable[[float], bytes]) -> tuple[bytes, bool]:
    """Text bytes from ``data`` with escape sequences removed, and whether a lone Esc was seen.

    ``more(timeout)`` reads what follows an Esc at the end of ``data`` (b"" when nothing came)."""
    out = bytearray()
    escaped = False
    i = 0
    while i < len(data):
        byte = data[i]
        if byte != ESC:
            out.append(byte)
            i += 1
            continue
        rest = data[i + 1 :]
        if not rest:
            rest = more(ESC_WAIT)
            data = data[: i + 1] + rest
        if not rest:
            escaped = True
            i += 1
            continue
        if data[i + 1 : i + 1 + len(PASTE_START)] == PASTE_START:
            end = data.find(PASTE_END, i)
            body_start = i + 1 + len(PASTE_START)
            out += data[body_start : end if end >= 0 else len(data)]
            i = end + len(PASTE_END) if end >= 0 else len(data)
            continue
        i = _skip_sequence(data, i)
    return bytes(out), escaped


def _skip_sequence(data: bytes, start: int) -> int:
    """Index after the escape sequence at ``start`` (CSI ``ESC [ … final``, SS3, or Alt+key)."""
    if start + 1 >= len(data):
        return start + 1
    kind = data[start + 1]
    if kind == ord("["):
        j = start + 2
        while j < len(data) and not 0x40 <= data[j] <= 0x7E:
            j += 1
        return j + 1
    return start + 3 if kind == ord("O") else start + 2


@dataclass
class TurnKeys:
    """Read the terminal on a thread while a turn runs (see the module docstring)."""

    fd: int
    on_escape: Callable[[], None] = interrupt_main_thread
    typeahead: TypeAhead = field(default_factory=TypeAhead)
    _stop: threading.Event = field(default_factory=threading.Event)
    _paused: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None
    _saved_mode: list | None = None

    def __enter__(self) -> TurnKeys:
        import termios
        import tty

        try:
            self._saved_mode = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
        except termios.error:
            self._saved_mode = None
            return self
        self._thread = threading.Thread(target=self._run, name="memagent-keys", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        import termios

        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
        if self._saved_mode is not None:
            try:
                termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved_mode)
            except termios.error:
                pass

    def pause(self) -> None:
        with self._lock:
            self._paused = True

    def resume(self) -> None:
        with self._lock:
            self._paused = False

    def _read(self, timeout: float) -> bytes:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        return os.read(self.fd, 4096) if ready else b""

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([self.fd], [], [], POLL)
            except (OSError, ValueError):
                return
            if not ready:
                continue
            with self._lock:
                paused = self._paused
                if not paused:
                    try:
                        data = os.read(self.fd, 4096)
                    except OSError:
                        return
            if paused:
                self._stop.wait(POLL)  # the approval prompt reads these keys
                continue
            if not data:
                return
            with self._lock:
                text, escaped = split_keys(data, self._read)
            self.typeahead.feed(text.decode("utf-8", "replace"))
            if escaped:
                self.on_escape()


__all__ = ["TurnKeys", "TypeAhead", "interrupt_main_thread", "split_keys"]
