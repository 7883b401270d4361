"""The interactive chat: prompt_toolkit input, rich output, slash commands, Ctrl-C handling.

A turn goes through the session protocol: the message is a ``Submit``, the events are read
from the session and rendered, an approval question is an ``ApprovalRequested`` answered with
``AnswerApproval`` from the terminal prompt, and Ctrl-C or Esc sends ``Cancel`` (the session
closes a streaming response at once and ends the turn as cancelled).

Start-up order matters for how fast the prompt appears: prompt_toolkit is imported and the
banner printed first, then the session (the anthropic SDK, chromadb, the stores) is opened in a
background thread while the user types. The first message or session command waits for it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memagent import __version__
from memagent.protocol import AnswerApproval, ApprovalRequested, Cancel, OpCompleted, OpRejected, Submit
from memagent.ui.commands import Reply, find_command, is_command, run_command
from memagent.ui.idle import IdleWatch
from memagent.ui.prompt_input import ClearLineInterrupt, make_prompt_session
from memagent.ui.safe_text import printable
from memagent.ui.session_loader import SessionFailed, SessionLoader, exit_code_of, warm_up
from memagent.ui.status import StatusLine
from memagent.ui.words import plural

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from rich.console import Console

    from memagent.agent.loop import Approval
    from memagent.commands_md import CommandSet
    from memagent.paths import ProjectPaths
    from memagent.session import Session
    from memagent.ui.approval import TerminalApprover
    from memagent.ui.attachments import Attachment
    from memagent.ui.keys import TurnKeys

PROMPT = "❯ "
EXIT_OK = 0
EXIT_FAILURE = 1
PASTE_LINES = 8  # a message longer than this is echoed as "[pasted N lines]"
PASTE_CHARS = 1500
EXIT_HINT = "(Ctrl-C again to exit, or Ctrl-D)"
EOF_KEY = "\x04"  # Ctrl-D typed while a turn ran: quit once it is over


def echo_text(text: str) -> str:
    """How a sent message is echoed: in full, or collapsed when it is a large paste."""
    lines = text.splitlines() or [""]
    if len(lines) <= PASTE_LINES and len(text) <= PASTE_CHARS:
        return PROMPT + "\n  ".join(lines)
    first = lines[0].strip()
    head = first if len(first) <= 60 else first[:59] + "…"
    label = f"[pasted {plural(len(lines), 'line')}]" if len(lines) > 1 else f"[pasted {plural(len(text), 'character')}]"
    return PROMPT + (f"{head} {label}" if head else label)


def session_status(session: Session) -> str:
    memory = "memory on" if session.memory is not None else (session.memory_off_reason or "memory off")
    resumed = f" · resumed from {session.resumed_from}" if session.resumed_from else ""
    return f"session {session.session_id}{resumed} · {memory}"


def handover_note(session: Session) -> str | None:
    """Which earlier session the first message's continuity note carries over (None: none)."""
    from memagent.features.continuity import ContinuityFeature

    feature = session.feature(ContinuityFeature)
    previous = feature.previous() if feature is not None else None
    if previous is None:
        return None
    return f"picking up from {previous[0].describe()}"


def _drain(session: Session) -> None:
    """Read a cancelled turn to its end without showing it (a question still asked: no)."""
    for event in session.events():
        if isinstance(event, ApprovalRequested):
            session.submit(AnswerApproval(event.id, "deny"))


@dataclass
class Repl:
    """One interactive chat. ``session_factory(fresh=False)`` opens the session (in a thread);
    ``fresh`` (``/clear``) starts a new one instead of resuming."""

    paths: ProjectPaths
    model: str
    session_factory: Callable[..., Session]
    preload: Callable[[], None] | None = None  # e.g. import the model SDK while memory opens
    console: Console | None = None
    read_line: Callable[[], str] | None = None  # replaces the prompt in tests
    ask: Callable[[str], Approval] | None = None  # replaces the approval key prompt in tests
    auto_approve: bool = False
    first_message: str | None = None  # sent as soon as the REPL starts
    resuming: bool = False  # -c / -r: show a recap of the session once it is open
    _prompt: PromptSession[str] | None = None
    _loader: SessionLoader | None = None
    _warnings_seen: int = 0
    _announced: bool = False
    _announce_lock: threading.Lock = field(default_factory=threading.Lock)
    _status: StatusLine | None = None
    _queued: list[str] = field(default_factory=list)  # lines typed ahead during a turn
    _prefill: str = ""
    _keys: TurnKeys | None = None  # the reader of keys while a turn runs
    _exit_armed: bool = False
    records_lost: bool = False  # set at close: part of the transcript could not be written
    _approver: TerminalApprover | None = None
    _custom: tuple[Session | None, CommandSet] | None = None  # discovered on first use, per session
    _pending: list[Attachment] = field(default_factory=list)  # !command outputs for the next message
    _start_mode: str | None = None  # the permission mode the session opened in (Shift-Tab's cycle)
    _idle: IdleWatch = field(default_factory=IdleWatch)

    def run(self) -> int:
        from rich.console import Console

        from memagent.ui.approval import TerminalApprover
        from memagent.ui.render import ReplRenderer

        console = self.console = self.console or Console(highlight=False)
        renderer = ReplRenderer(console)
        self._approver = TerminalApprover(
            console,
            before_prompt=self._before_approval(renderer),
            after_prompt=renderer.resume,
            after_answer=self._after_approval,
            **({"ask": self.ask} if self.ask is not None else {}),
        )
        self._status = StatusLine(self.model, self.auto_approve)
        if self.read_line is None:
            from memagent.ui.completion import ReplCompleter

            completer = ReplCompleter(self.paths.root, self._command_names, self._command_meta)
            self._prompt = make_prompt_session(self.paths.history_file, completer, self._cycle_mode)
        self._print_banner()
        if self.first_message:
            self._queued.append(self.first_message)
        self._loader = SessionLoader(
            lambda: warm_up(self.session_factory()), on_done=self._on_session_done, preload=self.preload
        )
        if self.read_line is not None:
            self._loader.start()
        try:
            code = self._loop(renderer)
        except SessionFailed as exc:
            sys.stderr.write(f"memagent: {exc}\n")
            code = exc.code
        finally:
            self._close()
        return code or (EXIT_FAILURE if self.records_lost else EXIT_OK)

    # ------------------------------------------------------------------ the loop

    def _loop(self, renderer) -> int:
        while True:
            self._stop_if_session_failed()
            try:
                line = self._next_line()
            except ClearLineInterrupt:
                self._exit_armed = False
                continue
            except KeyboardInterrupt:
                if self._exit_armed:
                    return EXIT_OK
                self._exit_armed = True
                self._print_dim(EXIT_HINT)
                continue
            except EOFError:
                return EXIT_OK
            self._exit_armed = False
            text = line.strip()
            if not text:
                continue
            try:
                if is_command(text):
                    if self._command(text, renderer):
                        return EXIT_OK
                elif text.startswith("!"):
                    self._shell(text[1:].strip())
                else:
                    self._turn(text, renderer)
            except KeyboardInterrupt:  # in a slash command's work, or just as a turn was sent
                renderer.finish()
                self._stop_turn()
                renderer.show_cancelled()

    def _stop_if_session_failed(self) -> None:
        loader = self._loader
        if loader is not None and loader.done and loader.error is not None:
            self._session()  # raises SessionFailed with the reason and exit code

    def _next_line(self) -> str:
        """A line typed ahead (or the first message), else one read from the prompt; echoed."""
        if self._queued:
            line = self._queued.pop(0)
            if line == EOF_KEY:
                raise EOFError
            if self.read_line is None and line.strip():
                self._echo(line)
            return line
        line = self._read()
        if self.read_line is None and line.strip():
            self._echo(line)
        return line

    def _read(self) -> str:
        with self._idle.prompt(self._loader):  # memory learns once if the user stays away
            return self._read_line()

    def _read_line(self) -> str:
        if self.read_line is not None:
            return self.read_line()
        from prompt_toolkit.formatted_text import FormattedText
        from prompt_toolkit.patch_stdout import patch_stdout

        loader = self._loader
        if loader is not None and not loader.started:
            # Start the heavy imports once the first prompt is on screen: before that they would
            # compete with drawing it for the GIL.
            app = self._prompt.app
            app.after_render += self._start_after_first_render
        prefill, self._prefill = self._prefill, ""

        def message() -> FormattedText:  # a callable: redrawn after Shift-Tab changes the mode
            status = self._status.text() if self._status is not None else self.model
            return FormattedText([("ansibrightblack", status + "\n"), ("bold ansicyan", PROMPT)])

        with patch_stdout(raw=True):
            return self._prompt.prompt(message, default=prefill)

    def _echo(self, line: str) -> None:
        assert self.console is not None
        from rich.text import Text

        echoed = Text(echo_text(line.strip("\n")))
        echoed.stylize("bold cyan", 0, len(PROMPT))
        self.console.print(echoed)

    def _start_after_first_render(self, app) -> None:
        app.after_render -= self._start_after_first_render
        if self._loader is not None:
            self._loader.start()

    def _session(self) -> Session:
        loader = self._loader
        assert loader is not None and self.console is not None
        try:
            if not loader.start().done:
                with self.console.status("Starting the session (loading the model client and memory)…"):
                    loader.wait()
            session = loader.get()
        except SessionFailed:
            raise
        except Exception as exc:
            raise SessionFailed(str(exc), exit_code_of(exc)) from None
        self._announce(session)
        return session

    def _command(self, text: str, renderer=None) -> bool:
        """Run a slash command; True when the REPL should quit."""
        assert self.console is not None
        custom = self._custom_commands()
        name = text.split()[0][1:]
        if find_command(name.lower()) is None and custom.get(name) is None:
            self._session()  # an MCP server's prompt is known once the session (and its servers) are up
            custom = self._custom_commands()
        reply: Reply = run_command(text, self._session, busy=self.console.status, custom=custom)
        if reply.text:
            self.console.print(printable(reply.text), style=reply.style or None, markup=False, highlight=False)
        if reply.action == "clear":
            self._clear()
        elif reply.action == "rewind":
            self._rewind(reply.argument)
        if reply.send and renderer is not None:
            self._turn(reply.send, renderer)
        if reply.invoke is not None and renderer is not None:
            self._turn("", renderer, invocation=reply.invoke)
        return reply.exit

    # ------------------------------------------------------------------ ecosystem: commands, context

    def _cycle_mode(self) -> None:
        """Shift-Tab at the prompt: the next permission mode (nothing before the session is open)."""
        from memagent.ui.commands import next_mode, set_permission_mode

        loader = self._loader
        session = loader.session if loader is not None and loader.done else None
        if session is None:
            return
        set_permission_mode(session, next_mode(session, self._start_mode or "default"))

    def _custom_commands(self):
        """The prompt commands: command files, skills and, once the session is open, the MCP
        servers' prompts (problems are shown once)."""
        loader = self._loader
        session = loader.session if loader is not None else None
        if self._custom is None or (session is not None and self._custom[0] is not session):
            from memagent.ui.slash import early_commands, session_commands

            found = session_commands(session) if session is not None else early_commands(self.paths)
            said = self._custom[1].problems if self._custom is not None else []
            assert self.console is not None
            for problem in found.problems:
                if problem not in said:
                    self.console.print(f"warning: {problem}", style="yellow", markup=False)
            self._custom = (session, found)
        return self._custom[1]

    def _command_names(self) -> list[str]:
        from memagent.ui.commands import all_commands

        return [c.name for c in all_commands()] + self._custom_commands().names()

    def _command_meta(self) -> dict[str, str]:
        from memagent.ui.slash import completion_meta

        return completion_meta(self._custom_commands())

    def _shell(self, command: str) -> None:
        """``!command``: run it now, show the output, keep it for the next message."""
        from memagent.ui.attachments import run_shell_escape

        assert self.console is not None
        if not command:
            self.console.print("usage: !command (runs in the project root)", style="red", markup=False)
            return
        with self.console.status(f"Running {command}…"):
            attachment = run_shell_escape(command, self.paths.root)
        self.console.print(attachment.text, markup=False, highlight=False)
        self.console.print(
            f"({attachment.source}; the output goes to the model with your next message)",
            style="dim",
            markup=False,
            highlight=False,
        )
        self._pending.append(attachment)

    def _with_attachments(self, text: str) -> str:
        """The message with its @path files and pending !command outputs attached."""
        from memagent.ui.attachments import attach_mentions, compose_message

        attachments, notes = attach_mentions(text, self.paths.root)
        assert self.console is not None
        for note in notes:
            self.console.print(note, style="dim", markup=False, highlight=False)
        attachments = self._pending + attachments
        self._pending = []
        return compose_message(text, attachments)

    def _rewind(self, arg: str) -> None:
        """/rewind: the picker; after a conversation rewind the prompt holds the turn's words."""
        from memagent.ui.rewind import RewindPrompts, run_rewind, terminal_prompts

        assert self.console is not None
        if self.read_line is not None:
            read = self.read_line
            prompts = RewindPrompts(lambda question: read(), lambda question, keys: read().strip().lower())
        else:
            prompts = terminal_prompts()
        self._prefill = run_rewind(self._session(), arg, self.console, prompts) or self._prefill

    def _clear(self) -> None:
        """/clear: close this session (it stays resumable) and open a fresh one in the background."""
        assert self.console is not None
        old = self._loader
        if old is not None and old.session is not None:
            with self.console.status("Closing the session…"):
                warnings = old.session.close()
            for warning in warnings:
                self.console.print(f"warning: {warning}", style="yellow", markup=False)
        self._pending = []
        self._announced = False
        self._loader = SessionLoader(
            lambda: warm_up(self.session_factory(fresh=True)), on_done=self._on_session_done
        ).start()
        self._session()

    def _turn(self, text: str, renderer, invocation=None) -> None:
        session = self._session()
        if invocation is not None:
            from memagent.ui.slash import invocation_events

            attach = self._with_attachments
            session.submit_turn(text, lambda: invocation_events(session.agent, invocation, attach=attach))
        else:
            session.submit(Submit(self._with_attachments(text)))
        try:
            with self._turn_keys():
                self._follow(session, renderer)
        finally:
            renderer.finish()
        self._show_warnings(session)

    def _follow(self, session: Session, renderer) -> None:
        """Render the running turn's events until the session is idle, answering its questions.
        Ctrl-C (or Esc) sends Cancel; the rest of the turn is still read, to its
        ``TurnEnded("cancelled")``."""
        while True:
            try:
                for event in session.events():
                    self._show(session, event, renderer)
                return
            except KeyboardInterrupt:
                session.submit(Cancel())
            except Exception as exc:  # a bug in showing the turn must not end the chat
                session.submit(Cancel())
                assert self.console is not None
                self.console.print(f"error: {type(exc).__name__}: {exc}", style="bold red", markup=False)
                _drain(session)
                renderer.show_cancelled()
                return

    def _stop_turn(self) -> None:
        """Cancel a turn that was started but is not being followed, and read it to its end."""
        loader = self._loader
        session = loader.session if loader is not None and loader.done else None
        if session is not None and session.status().busy:
            session.submit(Cancel())
            _drain(session)

    def _show(self, session: Session, event, renderer) -> None:
        assert self.console is not None and self._approver is not None
        if isinstance(event, ApprovalRequested):
            session.submit(AnswerApproval(event.id, self._approver.answer(event)))
        elif isinstance(event, OpRejected):
            if not isinstance(event.op, Cancel):  # a Cancel that came after the turn's end
                self.console.print(f"error: {printable(event.error)}", style="bold red", markup=False)
        elif not isinstance(event, OpCompleted):
            renderer.handle(event)

    def _turn_keys(self):
        """While a turn runs: Esc interrupts it; keys typed ahead are kept for the prompt."""
        import contextlib

        if self.read_line is not None or not sys.stdin.isatty():
            return contextlib.nullcontext()
        from memagent.ui.keys import TurnKeys

        keys = TurnKeys(sys.stdin.fileno())

        @contextlib.contextmanager
        def running():
            self._keys = keys
            try:
                with keys:
                    yield keys
            finally:
                self._keys = None
                lines, rest = keys.typeahead.take_lines()
                self._queued += lines + ([EOF_KEY] if keys.typeahead.eof else [])
                self._prefill = rest

        return running()

    def _before_approval(self, renderer) -> Callable[[], None]:
        def before() -> None:
            if self._keys is not None:
                self._keys.pause()
            renderer.pause()

        return before

    def _after_approval(self) -> None:
        if self._keys is not None:
            self._keys.resume()

    # ------------------------------------------------------------------ output

    def _print_banner(self) -> None:
        assert self.console is not None
        self.console.print(f"memagent {__version__} · {self.model} · {self.paths.root}", style="bold", markup=False)
        self.console.print(
            "/help for commands · Esc Enter for a newline · Esc or Ctrl-C cancels a turn · Ctrl-D quits",
            style="dim",
            markup=False,
        )
        if self.auto_approve:
            self.console.print(
                "--yes: every tool call runs without asking (except writes to protected paths)",
                style="yellow",
                markup=False,
            )

    def _print_dim(self, text: str) -> None:
        assert self.console is not None
        self.console.print(text, style="dim", markup=False)

    def _on_session_done(self, loader: SessionLoader) -> None:
        """Background thread: announce the session, or stop the prompt when it failed."""
        if loader.session is not None:
            self._announce(loader.session)
            return
        app = self._prompt.app if self._prompt is not None else None
        if app is not None and app.is_running and app.loop is not None:
            error = loader.error
            failed = SessionFailed(str(error), exit_code_of(error))
            app.loop.call_soon_threadsafe(lambda: app.exit(exception=failed) if app.is_running else None)

    def _announce(self, session: Session) -> None:
        with self._announce_lock:
            if self._announced:
                return
            self._announced = True
        if self._status is not None:
            self._status.attach(session)
        self._start_mode = session.status().permission_mode
        dim = "\x1b[2m{}\x1b[0m" if sys.stdout.isatty() else "{}"
        sys.stdout.write(dim.format(session_status(session)) + "\n")
        if session.resume_note:
            sys.stdout.write(dim.format(printable(session.resume_note)) + "\n")
        handed_over = handover_note(session)
        if handed_over:
            sys.stdout.write(dim.format(printable(handed_over)) + "\n")
        if self.resuming:
            from memagent.ui.recap import recap_lines

            for line in recap_lines(session.history()):
                sys.stdout.write(dim.format(line) + "\n")
        for warning in session.warnings:
            sys.stdout.write(f"warning: {warning}\n")
        self._warnings_seen = len(session.warnings)
        sys.stdout.flush()

    def _show_warnings(self, session: Session) -> None:
        assert self.console is not None
        for warning in session.warnings[self._warnings_seen :]:
            self.console.print(f"warning: {warning}", style="yellow", markup=False)
        self._warnings_seen = len(session.warnings)

    def _close(self) -> None:
        self._idle.stop()
        loader = self._loader
        if loader is None:
            return
        try:
            loader.wait()  # quitting while the session still opens: let it finish, then close it
        except KeyboardInterrupt:
            return  # not waiting: nothing was written yet (the transcript starts with the first message)
        session = loader.session
        if session is None:
            return
        learner = session.learner
        if learner is not None and session.status().turns:
            sys.stdout.write("Saving what this session taught to memory… (Ctrl-C skips)\n")
            sys.stdout.flush()
        for warning in session.close():
            sys.stderr.write(f"memagent: warning: {warning}\n")
        if learner is not None:
            from memagent.ui.recap import learned_counts, learned_items, learned_summary

            reports = list(learner.reports)
            summary = learned_summary(learned_counts(reports))
            if summary:
                sys.stdout.write("\n".join([summary, *(printable(line) for line in learned_items(reports))]) + "\n")
        if session.transcript.pending:
            self.records_lost = True


__all__ = ["PROMPT", "Repl", "echo_text", "handover_note", "session_status"]
