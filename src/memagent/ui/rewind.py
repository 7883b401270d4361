"""``/rewind`` in the REPL: pick a user turn, choose what to restore, confirm forgetting.

``/rewind`` lists the session's user turns and asks for a number, then whether to restore the
files and the conversation (Enter or ``b``), the files only (``c``) or the conversation only
(``o``); ``/rewind N`` skips the list, ``/rewind N code`` / ``/rewind N conversation`` the choice
too. Memory cards learned since that turn are listed with a yes/no question to forget them. When
the conversation went back, the prompt is pre-filled with the words of the turn rewound to, to
edit and send again. The steps are the session's (:meth:`memagent.runtime.Session.plan_rewind`,
:meth:`~memagent.runtime.Session.rewind`); the questions are injected, so tests need no terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from memagent.ui.safe_text import printable
from memagent.ui.words import plural

if TYPE_CHECKING:
    from rich.console import Console

    from memagent.checkpoints import Restored
    from memagent.context.rewind import TurnPoint
    from memagent.runtime import Session

USAGE = "usage: /rewind [N] [code|conversation] (N: a user turn, as /rewind lists them)"
MODES = {
    "": (True, True),
    "b": (True, True),
    "both": (True, True),
    "c": (True, False),
    "code": (True, False),
    "o": (False, True),
    "conversation": (False, True),
}
MODE_QUESTION = "Restore [b] code and conversation (Enter)  [c] code only  [o] conversation only  [Esc] cancel"


class LearnedCard(Protocol):
    """A memory card learned since the turn (the memory room's card, as far as the picker reads it)."""

    @property
    def id(self) -> str: ...

    @property
    def content(self) -> str: ...


@dataclass
class RewindPrompts:
    """How the picker asks: a line (the turn number) and a single key (a choice)."""

    ask_line: Callable[[str], str]
    ask_key: Callable[[str, str], str]  # (question, allowed keys) -> key, "" for Enter, "escape" to cancel


def parse(arg: str) -> tuple[int | None, str | None]:
    """``/rewind`` arguments: (turn or None, mode or None). ValueError with the usage otherwise."""
    words = arg.split()
    if len(words) > 2 or (words and not words[0].isdigit()):
        raise ValueError(USAGE)
    mode = words[1].lower() if len(words) == 2 else None
    if mode is not None and mode not in ("code", "conversation", "both"):
        raise ValueError(USAGE)
    return (int(words[0]) if words else None), mode


def run_rewind(session: Session, arg: str, console: Console, prompts: RewindPrompts) -> str:
    """Carry out ``/rewind arg``; returns the text to pre-fill the prompt with ("" for none)."""
    from memagent.checkpoints import CheckpointError
    from memagent.context.rewind import RewindError
    from memagent.features.checkpoints import learned_since

    def say(text: str, style: str = "") -> None:
        console.print(printable(text), style=style or None, markup=False, highlight=False)

    try:
        turn, mode = parse(arg)
        if turn is None:
            turn = _pick_turn(session, say, prompts)
            if turn is None:
                return ""
        plan = session.plan_rewind(turn)
        if mode is None:
            key = prompts.ask_key(MODE_QUESTION, "bco")
            if key == "escape":
                say("Rewind cancelled; nothing changed.", "dim")
                return ""
            mode = key
        code, conversation = MODES[mode]
        forget = _ask_forget(learned_since(session.memory, plan), say, prompts)
        restored = session.rewind(plan, code=code, conversation=conversation, forget=forget)
    except (ValueError, RewindError, CheckpointError) as exc:
        say(f"{exc}; nothing changed" if isinstance(exc, CheckpointError) else str(exc), "red")
        return ""
    say(_summary(plan.point, restored, conversation, forget), "green")
    return plan.point.text if conversation else ""


def _pick_turn(session: Session, say: Callable[..., None], prompts: RewindPrompts) -> int | None:
    from memagent.context.rewind import RewindError

    points = session.rewind_points()
    if not points:
        raise RewindError("this session has no user turns to rewind to")
    say("Turns of this session (rewinding goes back to just before the message):")
    for point in points:
        files = "" if point.checkpoint else "  (no checkpoint: conversation only)"
        say(f"  {point.number:>3}. {point.first_line}{files}")
    answer = prompts.ask_line(f"Rewind to turn (1-{len(points)}, Enter cancels): ").strip()
    if not answer:
        say("Rewind cancelled; nothing changed.", "dim")
        return None
    if not answer.isdigit():
        raise ValueError(f"not a turn number: {answer!r}")
    return int(answer)


def _ask_forget(learned: Sequence[LearnedCard], say: Callable[..., None], prompts: RewindPrompts) -> list[str]:
    if not learned:
        return []
    say(f"Since then this session taught memory {plural(len(learned), 'card')}:")
    for card in learned:
        say(f"  [{card.id}] {' '.join(card.content.split())[:100]}")
    key = prompts.ask_key("Forget them? [y] yes  [n] no (Enter)", "yn")
    return [card.id for card in learned] if key == "y" else []


def _summary(point: TurnPoint, restored: Restored | None, conversation: bool, forgotten: list[str]) -> str:
    parts = [f"Rewound to the start of turn {point.number}"]
    if restored is not None:
        kept = [c.path for c in restored.changes if c.status != "removed"]
        gone = [c.path for c in restored.changes if c.status == "removed"]
        names = ", ".join((kept + gone)[:6]) + (", …" if len(kept) + len(gone) > 6 else "")
        parts.append(f"files: {len(kept)} restored, {len(gone)} removed" + (f" ({names})" if names else ""))
    if conversation:
        parts.append("conversation: back to before that message (edit it and send it again)")
    if forgotten:
        parts.append(f"forgot {plural(len(forgotten), 'memory card')}")
    return "; ".join(parts) + "."


def terminal_prompts() -> RewindPrompts:
    """The picker's questions in a real terminal (prompt_toolkit)."""

    def ask_line(question: str) -> str:
        from prompt_toolkit import prompt

        return prompt(question)

    def ask_key(question: str, keys: str) -> str:
        from prompt_toolkit.application import Application
        from prompt_toolkit.formatted_text import FormattedText
        from prompt_toolkit.key_binding import KeyBindings
        from prompt_toolkit.layout import Layout, Window
        from prompt_toolkit.layout.controls import FormattedTextControl

        bindings = KeyBindings()
        for key in [*keys, *keys.upper()]:
            bindings.add(key)(lambda event, k=key.lower(): event.app.exit(result=k))
        bindings.add("enter")(lambda event: event.app.exit(result=""))
        bindings.add("escape")(lambda event: event.app.exit(result="escape"))
        bindings.add("c-c")(lambda event: event.app.exit(result="escape"))
        control = FormattedTextControl(FormattedText([("bold", question + " ")]), show_cursor=True)
        app: Application[str] = Application(
            layout=Layout(Window(control, height=1, dont_extend_height=True)), key_bindings=bindings, full_screen=False
        )
        return app.run()

    return RewindPrompts(ask_line, ask_key)


__all__ = ["RewindPrompts", "parse", "run_rewind", "terminal_prompts"]
