"""`memagent` (interactive chat) and `memagent -p PROMPT` (print mode).

Heavy modules (the agent runtime, which imports the anthropic SDK and chromadb) are imported
only once a session is really needed; the REPL opens its session in a background thread so
the prompt appears before those imports finish.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Optional

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
    output_format: str = "text"
    max_turns: Optional[int] = None


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


def open_metered(options: ChatOptions, *, non_interactive: bool, approver=None, fresh: bool = False):
    """``runtime.open_session`` with a model whose every call is metered (for ``/cost`` and the
    json outputs). ``fresh`` ignores -c/-r (``/clear`` starts a new session)."""
    from memagent.config import ConfigError, load_settings, project_paths
    from memagent.llm.metered import MeteredModel
    from memagent.runtime import SetupError, make_model, open_session

    try:
        settings = load_settings(project_paths(options.root), overrides={"model": options.model})
    except ConfigError as exc:
        raise SetupError(str(exc)) from None
    model = MeteredModel(make_model(settings))
    wanted = session_options(options, non_interactive=non_interactive)
    if fresh:
        wanted.resume_id, wanted.continue_latest = None, False
    extra = {"approver": approver} if approver is not None else {}
    return open_session(wanted, model=model, **extra)


def open_or_fail(options: ChatOptions, *, non_interactive: bool):
    """``runtime.open_session`` with every setup problem turned into a one-line exit."""
    from memagent.context.transcript import TranscriptError
    from memagent.runtime import SetupError

    try:
        return open_metered(options, non_interactive=non_interactive)
    except SetupError as exc:
        fail(str(exc), exc.code)
    except (TranscriptError, OSError) as exc:
        fail(str(exc), EXIT_FAILURE)


def run_print_mode(options: ChatOptions) -> int:
    from memagent.ui.printmode import OUTPUT_FORMATS, run_print

    check_root(options.root)
    if options.output_format not in OUTPUT_FORMATS:
        fail(f"--output-format must be one of {', '.join(OUTPUT_FORMATS)}, not {options.output_format!r}", EXIT_USAGE)
    prompt = read_prompt(options.prompt or "", sys.stdin)
    session = open_or_fail(options, non_interactive=not options.auto_approve)
    try:
        color = sys.stderr.isatty() and not os.environ.get("NO_COLOR")
        return run_print(
            session, prompt, sys.stdout, sys.stderr, color=color,
            output_format=options.output_format, max_turns=options.max_turns,
        )
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

    def factory(approver, fresh: bool = False):
        return open_metered(options, non_interactive=False, approver=approver, fresh=fresh)

    return Repl(paths=paths, model=settings.model, session_factory=factory).run()


def run_chat(options: ChatOptions) -> None:
    """Entry from ``cli.main``: run the chosen mode and exit with its code."""
    if options.prompt is not None:
        code = run_print_mode(options)
    else:
        code = run_interactive(options)
    if code:
        raise typer.Exit(code)


__all__ = ["ChatOptions", "read_prompt", "run_chat"]
