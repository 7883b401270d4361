"""The REPL's prompt: its key bindings and the prompt_toolkit session that reads a message.

Enter submits; Esc Enter (what Alt Enter sends) inserts a newline; Ctrl-C on an empty prompt
counts toward the two-Ctrl-C exit, on a line with text drops the line; Shift-Tab cycles the
permission mode. The input history persists across sessions, secrets redacted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer
    from prompt_toolkit.history import History
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.key_binding.key_processor import KeyPressEvent


class ClearLineInterrupt(KeyboardInterrupt):
    """Ctrl-C at a prompt holding text: the line is dropped, nothing else happens.

    Every other KeyboardInterrupt at the prompt (an empty line, or a Ctrl-C that arrives between
    two prompts) counts toward the two-Ctrl-C exit."""


def make_key_bindings(on_shift_tab: Callable[[], None] | None = None) -> KeyBindings:
    """Enter submits; Esc-Enter (what Alt-Enter sends) inserts a newline; Ctrl-C on an empty
    prompt raises KeyboardInterrupt (a second one in a row quits), otherwise
    :class:`ClearLineInterrupt` (the line is dropped); Shift-Tab calls ``on_shift_tab`` (the REPL
    cycles the permission mode, as Claude Code does) and redraws the status line.

    Ctrl-J is left as a second Enter: a line typed ahead while a turn runs reaches the prompt
    with the terminal's CR→LF translation, so LF must submit, not insert a newline.
    """
    from prompt_toolkit.key_binding import KeyBindings

    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        empty = not event.current_buffer.text
        event.app.exit(exception=KeyboardInterrupt() if empty else ClearLineInterrupt())

    if on_shift_tab is not None:

        @bindings.add("s-tab")
        def _cycle(event: KeyPressEvent) -> None:
            on_shift_tab()
            event.app.invalidate()

    return bindings


def make_prompt_session(
    history_file: Path, completer: Completer | None = None, on_shift_tab: Callable[[], None] | None = None
) -> PromptSession[str]:
    """A prompt_toolkit session whose history persists in ``history_file`` across sessions
    (secrets redacted, the file private).

    The prompt (with its status line) and the typed text are erased when sent: the REPL echoes
    the message itself, collapsing large pastes."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import InMemoryHistory

    from memagent.ui.history import RedactingFileHistory

    try:
        history: History = RedactingFileHistory(history_file)
    except OSError:
        history = InMemoryHistory()
    return PromptSession(
        history=history,
        key_bindings=make_key_bindings(on_shift_tab),
        multiline=False,
        prompt_continuation="  ",
        enable_open_in_editor=False,
        erase_when_done=True,
        completer=completer,
        complete_while_typing=False,
    )


__all__ = ["ClearLineInterrupt", "make_key_bindings", "make_prompt_session"]
