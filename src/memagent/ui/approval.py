"""The interactive approval prompt: y = this call, a = always this exact call, n = deny.

The user sees what will happen and why the gate asks before answering: the full command for
``bash``, the path and the first lines of the new content for ``write_file``, the path and a
small diff for ``edit_file``, the key argument otherwise; then the gate's reason (``runs code:
the command has a redirection to a file, which no allow rule approves``). "Always" approves
exactly this call from now on — the rule saved for the project is shown.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import ValidationError

from memagent.agent.loop import ASKER, Approval
from memagent.permissions import suggested_rule
from memagent.protocol import ApprovalRequested, Decision
from memagent.ui.safe_text import printable
from memagent.ui.words import plural

if TYPE_CHECKING:
    from prompt_toolkit.key_binding.key_processor import KeyPressEvent
    from rich.console import Console

    from memagent.jsontypes import JsonMapping, JsonObject
    from memagent.tools.base import RegisteredTool

PREVIEW_LINES = 8
PREVIEW_WIDTH = 160

ANSWERS = {
    "y": Approval.ALLOW,
    "a": Approval.ALWAYS,
    "n": Approval.DENY,
}
QUESTION = "Allow? [y] yes  [a] always (exactly this call)  [n] no (Esc)"


def _clip(line: str) -> str:
    return line if len(line) <= PREVIEW_WIDTH else line[: PREVIEW_WIDTH - 1] + "…"


def preview_lines(text: str, limit: int = PREVIEW_LINES, prefix: str = "") -> list[str]:
    """The first ``limit`` lines of ``text`` (each clipped), and a count of the rest."""
    lines = str(text).splitlines() or [""]
    shown = [prefix + _clip(line) for line in lines[:limit]]
    if len(lines) > limit:
        shown.append(f"{prefix}… {plural(len(lines) - limit, 'more line')}")
    return shown


def describe_call(name: str, tool_input: JsonMapping, summary: str) -> list[str]:
    """What the approval prompt shows above the question, as plain lines."""
    if name == "bash":
        lines = [f"bash wants to run: {tool_input.get('command', '')}".rstrip()]
        timeout = tool_input.get("timeout")
        if timeout is not None:
            lines.append(f"  (timeout {timeout} s)")
        return lines
    if name == "write_file":
        content = str(tool_input.get("content", ""))
        count = len(content.splitlines())
        lines = [f"write_file wants to write {tool_input.get('path', '?')} ({plural(count, 'line')}):"]
        return lines + preview_lines(content, prefix="  │ ")
    if name == "edit_file":
        lines = [f"edit_file wants to edit {tool_input.get('path', '?')}:"]
        lines += preview_lines(str(tool_input.get("old_text", "")), limit=4, prefix="  - ")
        lines += preview_lines(str(tool_input.get("new_text", "")), limit=4, prefix="  + ")
        return lines
    detail = summary or _clip(json.dumps(tool_input, ensure_ascii=False))
    return [f"{name} wants to run: {detail}"]


def ask_key(question: str) -> Approval:
    """Read one key with prompt_toolkit: y/a/n (Esc = n); Ctrl-C raises KeyboardInterrupt."""
    from prompt_toolkit.application import Application
    from prompt_toolkit.formatted_text import FormattedText
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.layout import Layout, Window
    from prompt_toolkit.layout.controls import FormattedTextControl

    bindings = KeyBindings()

    def bind(key: str, decision: Approval) -> None:
        @bindings.add(key)
        def _(event: KeyPressEvent) -> None:
            event.app.exit(result=decision)

    for key, decision in ANSWERS.items():
        bind(key, decision)
        bind(key.upper(), decision)
    bind("escape", Approval.DENY)

    @bindings.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        event.app.exit(exception=KeyboardInterrupt())

    control = FormattedTextControl(FormattedText([("bold", question + " ")]), show_cursor=True)
    app: Application[Approval] = Application(
        layout=Layout(Window(control, height=1, dont_extend_height=True)),
        key_bindings=bindings,
        full_screen=False,
        erase_when_done=False,
    )
    return app.run()


@dataclass
class TerminalApprover:
    """The REPL's approval prompt: :meth:`answer` answers a session's
    :class:`~memagent.protocol.ApprovalRequested`; calling it is an
    :class:`~memagent.agent.loop.Approver` for an agent driven directly.

    ``before_prompt`` clears the renderer's spinner so the question is not drawn over, and
    ``after_prompt`` brings it back; ``ask`` reads the decision (replaced in tests).
    """

    console: Console
    before_prompt: Callable[[], None] = lambda: None
    after_prompt: Callable[[], None] = lambda: None
    after_answer: Callable[[], None] = lambda: None  # always, even on deny or Ctrl-C
    ask: Callable[[str], Approval] = ask_key
    decisions: list[tuple[str, Approval]] = field(default_factory=list)

    def answer(self, request: ApprovalRequested) -> Decision:
        """Show the call and why the gate asks, read y/a/n; Ctrl-C raises KeyboardInterrupt."""
        always = _always_text(request.rule)
        decision = self._prompt(request.tool, request.input, request.summary, request.reason, request.asker, always)
        return DECISIONS[decision]

    def __call__(self, tool: RegisteredTool, tool_input: JsonObject, summary: str, reason: str = "") -> Approval:
        return self._prompt(tool.name, tool_input, summary, reason, ASKER.get(), always_label(tool, tool_input))

    def _prompt(
        self, name: str, tool_input: JsonMapping, summary: str, reason: str, asker: str, always: str
    ) -> Approval:
        from rich.text import Text

        self.before_prompt()
        lines = describe_call(name, tool_input, summary)
        if asker:  # a subagent's call: say which one asks
            lines[0] = f"[subagent {asker}] {lines[0]}"
        for index, line in enumerate(lines):
            self.console.print(Text(printable(line), style="bold yellow" if index == 0 else ""))
        if reason:
            self.console.print(Text(printable(f"  why it asks: {reason}"), style="dim"))
        try:
            decision = self.ask(QUESTION)
        finally:
            self.after_answer()
        self.decisions.append((name, decision))
        label = {Approval.ALLOW: "allowed once", Approval.ALWAYS: always, Approval.DENY: "denied"}[decision]
        self.console.print(Text(f"  {label}", style="red" if decision is Approval.DENY else "green"))
        if decision is not Approval.DENY:
            self.after_prompt()
        return decision


DECISIONS: dict[Approval, Decision] = {Approval.ALLOW: "allow", Approval.ALWAYS: "always", Approval.DENY: "deny"}


def _always_text(rule: str | None) -> str:
    if rule is None:
        return "allowed once (no rule can name exactly this call, so nothing was saved)"
    return f"allowed; from now on {printable(rule)} runs without asking (saved for this project)"


def always_label(tool: RegisteredTool, tool_input: JsonObject) -> str:
    """What an "always" answer approves from now on: the rule saved, or why there is none."""
    try:
        rule = suggested_rule(tool.name, tool.bind(tool_input).declare())
    except (ValidationError, ValueError, TypeError):
        rule = None
    return _always_text(rule)


__all__ = ["TerminalApprover", "always_label", "ask_key", "describe_call", "preview_lines"]
