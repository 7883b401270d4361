"""`memagent` (interactive chat) and `memagent -p PROMPT` (print mode).

Heavy modules (the agent runtime, which imports the anthropic SDK and chromadb) are imported
only once a session is really needed; the REPL opens its session in a background thread so
the prompt appears before those imports finish.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

import typer

from memagent.cli.common import EXIT_FAILURE, EXIT_USAGE, fail
from memagent.jsontypes import JsonObject

if TYPE_CHECKING:
    from memagent.config import ProjectPaths
    from memagent.session import Session


@dataclass
class ChatOptions:
    root: Path | None
    prompt: str | None
    continue_latest: bool
    resume_id: str | None
    auto_approve: bool
    model: str | None
    memory: bool
    first_message: str | None = None  # ``memagent "fix the bug"``: sent once the REPL starts
    pick_session: bool = False  # ``-r`` without an id: choose from the recent sessions
    output_format: str = "text"
    max_turns: int | None = None
    permission_mode: str | None = None
    input_format: str = "text"
    replay_user_messages: bool = False
    # Claude Code's flags (see memagent.cli.claude_flags), checked by apply_claude_flags
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()
    add_dirs: tuple[Path, ...] = ()
    mcp_servers: JsonObject = field(default_factory=dict)  # "mcpServers" entries (--mcp-config)
    session_id: str | None = None
    system_prompt: str | None = None
    append_system_prompt: str | None = None

    @property
    def headless(self) -> bool:
        """Print mode: ``-p``, or stream-json messages on stdin (as the Agent SDK runs it)."""
        return self.prompt is not None or self.input_format == "stream-json"

    def apply_claude_flags(
        self,
        *,
        allowed_tools: Sequence[str] = (),
        disallowed_tools: Sequence[str] = (),
        add_dirs: Sequence[Path] = (),
        mcp_configs: Sequence[str] = (),
        session_id: str | None = None,
        system_prompt: tuple[str | None, Path | None] = (None, None),
        append_system_prompt: tuple[str | None, Path | None] = (None, None),
    ) -> None:
        """Check and keep Claude Code's flags; raises ``claude_flags.FlagError`` (one line)."""
        from memagent.cli import claude_flags as flags

        self.allowed_tools = flags.split_rules(allowed_tools)
        self.disallowed_tools = flags.split_rules(disallowed_tools)
        self.add_dirs = flags.check_dirs(add_dirs)
        self.mcp_servers = flags.mcp_servers_from(mcp_configs)
        self.system_prompt = flags.prompt_text(*system_prompt, "--system-prompt")
        self.append_system_prompt = flags.prompt_text(*append_system_prompt, "--append-system-prompt")
        if session_id is not None:
            if self.continue_latest or self.resume_id or self.pick_session:
                raise flags.FlagError("--session-id starts a new session; to continue one use -r ID (or -c)")
            self.session_id = flags.check_session_id(session_id)


def read_prompt(raw: str, stdin: IO[str]) -> str:
    """The prompt text: ``-`` reads stdin. An empty prompt is a usage error. Bytes that are not
    UTF-8 are decoded by :mod:`memagent.decoding`'s policy, with a one-line notice."""
    from memagent.decoding import text_from_input

    text, note = raw, None
    if raw == "-":
        buffer = getattr(stdin, "buffer", None)
        data = buffer.read() if buffer is not None else stdin.read().encode("utf-8", "surrogateescape")
        text, note = text_from_input(data, "stdin")
    if note:
        sys.stderr.write(f"memagent: {note}\n")
    text = text.strip()
    if not text:
        where = "stdin was empty" if raw == "-" else "the prompt is empty"
        fail(f'{where}; usage: memagent -p "PROMPT" (or -p - to read the prompt from stdin)', EXIT_USAGE)
    return text


def session_options(
    options: ChatOptions, *, non_interactive: bool, prefetch_memory: bool = True, memory_upkeep: bool = True
):
    from memagent.runtime import SessionOptions

    return SessionOptions(
        prefetch_memory=prefetch_memory,
        memory_upkeep=memory_upkeep,
        root=options.root,
        model=options.model,
        auto_approve=options.auto_approve,
        non_interactive=non_interactive,
        memory=options.memory,
        resume_id=options.resume_id,
        continue_latest=options.continue_latest,
        permission_mode=options.permission_mode,
        kind="headless" if options.prompt is not None else "interactive",
        allowed_tools=options.allowed_tools,
        disallowed_tools=options.disallowed_tools,
        add_dirs=options.add_dirs,
        mcp_servers=options.mcp_servers,
        session_id=options.session_id,
        system_prompt=options.system_prompt,
        append_system_prompt=options.append_system_prompt,
        max_rounds=options.max_turns,
    )


def check_root(root: Path | None) -> None:
    if root is not None and not Path(root).is_dir():
        fail(f"project root {root} is not a directory", EXIT_USAGE)


def open_metered(
    options: ChatOptions, *, non_interactive: bool, approver=None, fresh: bool = False, one_shot: str | None = None
):
    """``runtime.open_session`` (whose model meters every call, for ``/cost`` and the json
    outputs). ``fresh`` ignores -c/-r (``/clear`` starts a new session)."""
    from memagent.runtime import open_session

    if one_shot is None:
        wanted = session_options(options, non_interactive=non_interactive)
    else:  # one answer, then exit: no background upkeep; a greeting loads no embedder or index
        from memagent.memory.query import is_trivial

        wanted = session_options(
            options, non_interactive=non_interactive, prefetch_memory=not is_trivial(one_shot), memory_upkeep=False
        )
    if fresh:  # a new logical session too: --session-id named the first one only
        wanted.resume_id, wanted.continue_latest, wanted.session_id = None, False, None
        wanted.start_source = "clear"
    extra = {"approver": approver} if approver is not None else {}
    return open_session(wanted, **extra)


def open_or_fail(options: ChatOptions, *, non_interactive: bool, one_shot: str | None = None):
    """``runtime.open_session`` with every setup problem turned into a one-line exit."""
    from memagent.context.transcript import TranscriptError
    from memagent.runtime import SetupError

    try:
        return open_metered(options, non_interactive=non_interactive, one_shot=one_shot)
    except SetupError as exc:
        fail(str(exc), exc.code)
    except (TranscriptError, OSError) as exc:
        fail(str(exc), EXIT_FAILURE)


def records_lost(session: Session) -> int:
    """Transcript records still unwritten after ``close()`` (a full disk): they are lost."""
    return session.transcript.pending


def close_session(session: Session) -> int:
    """Close, show the closing warnings, and say whether history was lost (exit code 1)."""
    for warning in session.close():
        sys.stderr.write(f"memagent: warning: {warning}\n")
    return EXIT_FAILURE if records_lost(session) else 0


def check_print_options(options: ChatOptions) -> None:
    """Usage errors of print mode, before anything is opened."""
    from memagent.ui.printmode import INPUT_FORMATS, OUTPUT_FORMATS

    check_root(options.root)
    if options.pick_session:
        fail(
            "-r needs a session id with -p (there is no one to pick one); `memagent sessions list` shows them",
            EXIT_USAGE,
        )
    if options.output_format not in OUTPUT_FORMATS:
        fail(f"--output-format must be one of {', '.join(OUTPUT_FORMATS)}, not {options.output_format!r}", EXIT_USAGE)
    if options.input_format not in INPUT_FORMATS:
        fail(f"--input-format must be one of {', '.join(INPUT_FORMATS)}, not {options.input_format!r}", EXIT_USAGE)
    streaming_in = options.input_format == "stream-json"
    if streaming_in and options.output_format != "stream-json":
        fail("--input-format stream-json needs --output-format stream-json", EXIT_USAGE)
    if streaming_in and options.prompt not in (None, "-"):
        fail("with --input-format stream-json the messages come on stdin, not as -p PROMPT", EXIT_USAGE)
    if options.replay_user_messages and not streaming_in:
        fail("--replay-user-messages goes with --input-format stream-json and --output-format stream-json", EXIT_USAGE)


def run_print_mode(options: ChatOptions) -> int:
    """``-p``: one turn (or one per stdin message with stream-json input); SIGTERM and SIGHUP
    end it like Ctrl-C, with a final result and exit code 128 + the signal."""
    from memagent.ui.printmode import run_print, signals_interrupt

    check_print_options(options)
    streaming_in = options.input_format == "stream-json"
    with signals_interrupt() as stop:
        try:
            prompt = "" if streaming_in else read_prompt(options.prompt or "", sys.stdin)
            threading.Thread(target=_quietly, args=(preload_model_sdk,), name="memagent-preload", daemon=True).start()
            # nobody to ask in -p: a call that asks is refused
            session = open_or_fail(options, non_interactive=True, one_shot=None if streaming_in else prompt)
            if session.resume_note:
                sys.stderr.write(f"memagent: {session.resume_note}\n")
        except KeyboardInterrupt:
            fail(f"{stop.reason} before the session started", stop.exit_code)
        try:
            color = sys.stderr.isatty() and not os.environ.get("NO_COLOR")
            if streaming_in:
                from memagent.ui.stream_input import run_stream_input

                code = run_stream_input(
                    session,
                    sys.stdin.buffer,
                    sys.stdout,
                    sys.stderr,
                    stop=stop,
                    replay=options.replay_user_messages,
                )
            else:
                code = run_print(
                    session,
                    prompt,
                    sys.stdout,
                    sys.stderr,
                    color=color,
                    output_format=options.output_format,
                    stop=stop,
                )
        finally:
            closed = close_session(session)
    return code or closed


def pick_session(paths, stdin: IO[str], out: IO[str], limit: int = 10) -> str | None:
    """``-r`` alone: number the recent sessions and read a choice (Enter = the first).

    Sessions worth continuing (interactive, or that did work) come first, newest first; throw-away
    runs (a headless ``-p`` without tool use) after them. Returns the chosen id, or None when the
    user gives up (q, Ctrl-D) or there is none."""
    from memagent.context.sessions import list_sessions, preferred_first
    from memagent.ui.words import plural

    every = [info for info in list_sessions(paths.transcripts) if info.messages]
    sessions = preferred_first(every)[:limit]
    if not sessions:
        out.write(f"No sessions in {paths.transcripts} yet; starting a new one.\n")
        return None
    out.write("Recent sessions:\n")
    for number, info in enumerate(sessions, start=1):
        started = (info.started or "")[:16].replace("T", " ")
        line = (info.first_user_line or "(no messages)")[:60]
        kind = info.kind or "interactive"
        out.write(f"  {number:>2}. {info.id}  {started}  {kind:<11}  {plural(info.turns, 'turn'):>9}  {line}\n")
    if len(every) > len(sessions):
        out.write(
            f"  ({plural(len(every) - len(sessions), 'older session')} not shown; `memagent sessions list` shows all)\n"
        )
    while True:
        out.write(f"Resume which session? [1-{len(sessions)}, Enter = 1, q = cancel] ")
        out.flush()
        answer = stdin.readline()
        if not answer or answer.strip().lower() in ("q", "quit"):
            return None
        choice = answer.strip() or "1"
        if choice.isdigit() and 1 <= int(choice) <= len(sessions):
            return sessions[int(choice) - 1].id
        matches = [info.id for info in sessions if info.id.startswith(choice)]
        if len(matches) == 1:
            return matches[0]
        out.write(f"  {choice!r} is not one of the numbers above.\n")


def offer_trust(paths: ProjectPaths) -> None:
    """Ask whether to trust the project: the first time its settings files (``.memagent.toml``,
    Claude Code's ``.claude/settings.json`` and ``.claude/settings.local.json``) ask for widening
    settings (a "no" is remembered until a file asks for more), and whenever a power file of a
    trusted project changed since it was trusted (the diff is shown; a "no" is remembered for
    that content)."""
    from memagent.trust import TrustError, trust_state

    try:
        state = trust_state(paths.home, paths.root)
        if state.trusted:
            _offer_changes(paths, state.to_ask)
        else:
            _offer_first_trust(paths)
    except TrustError as exc:
        sys.stderr.write(f"memagent: warning: {exc}\n")


def _offer_first_trust(paths: ProjectPaths) -> None:
    from memagent.claude_settings import project_widening
    from memagent.trust import decline_trust, requested_widening, should_ask, trust_project

    files = [(paths.project_config.name, requested_widening(paths.project_config)), *project_widening(paths)]
    files = [(name, keys) for name, keys in files if keys]
    asks = [key if name == paths.project_config.name else f"{name}:{key}" for name, keys in files for key in keys]
    if not asks or not should_ask(paths.home, paths.root, asks):
        return
    wants = "\n".join(f"This project's {name} asks for: {', '.join(keys)}." for name, keys in files)
    question = f"{wants}\nTrust this project ({paths.root})?"
    if typer.confirm(question, default=False):
        trust_project(paths.home, paths.root)
    else:
        decline_trust(paths.home, paths.root, asks)
        sys.stderr.write("memagent: not trusted; those settings are ignored (`memagent trust` changes that)\n")


def _offer_changes(paths: ProjectPaths, changed: tuple[str, ...]) -> None:
    """A trusted project whose power files changed: show what changed, ask to trust it as it is."""
    from memagent.trust import change_diff, decline_changes, trust_project
    from memagent.ui.safe_text import printable

    if not changed:
        return
    typer.echo(f"These files changed since you trusted {paths.root}: {', '.join(changed)}")
    for name in changed:
        for line in change_diff(paths.home, paths.root, name).splitlines():
            typer.echo("  " + printable(line))
    if typer.confirm("Trust the project as it is now?", default=False):
        trust_project(paths.home, paths.root)
    else:
        decline_changes(paths.home, paths.root, changed)
        sys.stderr.write("memagent: the changed files are ignored this session (`memagent trust` accepts them)\n")


def run_interactive(options: ChatOptions) -> int:
    from memagent.config import ConfigError, credentials_from_env, load_settings, project_paths

    check_root(options.root)
    if not sys.stdin.isatty():
        fail("the interactive chat needs a terminal; use -p PROMPT (or -p - to read stdin)", EXIT_USAGE)
    if not credentials_from_env().present:
        from memagent.runtime import MISSING_KEY

        fail(MISSING_KEY, EXIT_USAGE)
    paths = project_paths(options.root)
    offer_trust(paths)
    try:
        settings = load_settings(paths, overrides={"model": options.model})
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    if options.memory and settings.memory_enabled:
        from memagent.cli.memory_learn import offer_returned_cards

        offer_returned_cards(paths, settings)
    if options.pick_session:
        chosen = pick_session(paths, sys.stdin, sys.stdout)
        if chosen is None and list_has_sessions(paths):
            return 0
        options.pick_session, options.resume_id = False, chosen

    from memagent.ui.repl import Repl

    def factory(fresh: bool = False):  # approvals come to the REPL as the session's events
        return open_metered(options, non_interactive=False, fresh=fresh)

    return Repl(
        paths=paths,
        model=settings.model,
        session_factory=factory,
        preload=preload_model_sdk,
        auto_approve=options.auto_approve or settings.auto_approve,
        first_message=options.first_message,
        resuming=bool(options.resume_id or options.continue_latest),
    ).run()


def _quietly(action) -> None:
    try:
        action()
    except Exception:  # a head start only; the real use reports any problem
        pass


def preload_model_sdk() -> None:
    """Import the model SDK (the slowest import) on a thread of its own, so that it overlaps
    with opening the memory store instead of following it."""
    from memagent.llm import anthropic as adapter

    adapter.preload_sdk()


def list_has_sessions(paths) -> bool:
    directory = paths.transcripts
    return directory.is_dir() and any(directory.glob("*.jsonl"))


class Terminated(SystemExit):
    """SIGTERM or SIGHUP arrived: unwinds like Ctrl-C (tool process groups are killed, the
    transcript stays valid) and exits with 128 + the signal number."""


@contextmanager
def exit_on_termination_signals() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise :class:`Terminated` in the main thread.

    The exception travels through the running tool (bash kills its process group), the loop and
    the session's ``close``; a second signal during that clean-up gets the default action."""

    def handler(signum: int, frame: object) -> None:
        for name in ("SIGTERM", "SIGHUP"):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        raise Terminated(128 + signum)

    previous = {}
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None:
            previous[number] = signal.signal(number, handler)
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def run_chat(options: ChatOptions) -> None:
    """Entry from ``cli.main``: run the chosen mode and exit with its code."""
    if options.pick_session and options.prompt is None and not sys.stdin.isatty():
        fail(
            "-r needs a session id when there is no terminal to pick one in; `memagent sessions list` shows them",
            EXIT_USAGE,
        )
    if options.headless:
        code = run_print_mode(options)
    else:
        with exit_on_termination_signals():
            code = run_interactive(options)
    if code:
        raise typer.Exit(code)


__all__ = ["ChatOptions", "read_prompt", "run_chat"]
