"""`memagent` (interactive chat) and `memagent -p PROMPT` (print mode).

Heavy modules (the agent runtime, which imports the anthropic SDK and chromadb) are imported
only once a session is really needed; the REPL opens its session in a background thread so
the prompt appears before those imports finish.
"""

from __future__ import annotations

import os
import signal
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator, Optional

import typer

from memagent.cli.common import EXIT_FAILURE, EXIT_USAGE, fail


@dataclass
class ChatOptions:
    root: Optional[Path]
    prompt: Optional[str]
    continue_latest: bool
    resume_id: Optional[str]
    auto_approve: bool
    model: Optional[str]
    memory: bool


def read_prompt(raw: str, stdin: IO[str]) -> str:
    """The prompt text: ``-`` reads stdin. An empty prompt is a usage error."""
    text = stdin.read() if raw == "-" else raw
    text = text.strip()
    if not text:
        where = "stdin was empty" if raw == "-" else "the prompt is empty"
        fail(f"{where}; usage: memagent -p \"PROMPT\" (or -p - to read the prompt from stdin)", EXIT_USAGE)
    return text


def session_options(options: ChatOptions, *, non_interactive: bool):
    from memagent.runtime import SessionOptions

    return SessionOptions(
        root=options.root,
        model=options.model,
        auto_approve=options.auto_approve,
        non_interactive=non_interactive,
        memory=options.memory,
        resume_id=options.resume_id,
        continue_latest=options.continue_latest,
    )


def check_root(root: Optional[Path]) -> None:
    if root is not None and not Path(root).is_dir():
        fail(f"project root {root} is not a directory", EXIT_USAGE)


def open_or_fail(options: ChatOptions, *, non_interactive: bool):
    """``runtime.open_session`` with every setup problem turned into a one-line exit."""
    from memagent.context.transcript import TranscriptError
    from memagent.runtime import SetupError, open_session

    try:
        return open_session(session_options(options, non_interactive=non_interactive))
    except SetupError as exc:
        fail(str(exc), exc.code)
    except (TranscriptError, OSError) as exc:
        fail(str(exc), EXIT_FAILURE)


def run_print_mode(options: ChatOptions) -> int:
    from memagent.ui.printmode import run_print

    check_root(options.root)
    prompt = read_prompt(options.prompt or "", sys.stdin)
    session = open_or_fail(options, non_interactive=not options.auto_approve)
    try:
        color = sys.stderr.isatty() and not os.environ.get("NO_COLOR")
        return run_print(session, prompt, sys.stdout, sys.stderr, color=color)
    finally:
        for warning in session.close():
            sys.stderr.write(f"memagent: warning: {warning}\n")


def run_interactive(options: ChatOptions) -> int:
    from memagent.config import ConfigError, credentials_from_env, load_settings, project_paths

    check_root(options.root)
    if not sys.stdin.isatty():
        fail("the interactive chat needs a terminal; use -p PROMPT (or -p - to read stdin)", EXIT_USAGE)
    if not credentials_from_env().present:
        from memagent.runtime import MISSING_KEY

        fail(MISSING_KEY, EXIT_USAGE)
    paths = project_paths(options.root)
    try:
        settings = load_settings(paths, overrides={"model": options.model})
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)

    from memagent.ui.repl import Repl

    def factory(approver):
        from memagent.runtime import open_session

        return open_session(session_options(options, non_interactive=False), approver=approver)

    return Repl(paths=paths, model=settings.model, session_factory=factory).run()


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
    with exit_on_termination_signals():
        if options.prompt is not None:
            code = run_print_mode(options)
        else:
            code = run_interactive(options)
    if code:
        raise typer.Exit(code)


__all__ = ["ChatOptions", "read_prompt", "run_chat"]
