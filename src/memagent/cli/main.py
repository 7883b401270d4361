"""Entry point: ``memagent`` (chat), ``-p`` (one-shot), and the sub-apps.

Start-up matters (`memagent --help` and `memagent tasks` stay within 1.5× of a bare typer app):
typer builds a pydantic coercer for every parameter of every command it parses, and each sub-app pulls in its own room. So the console script mounts only the
sub-app the command line names; the others appear as help-only placeholders, which is all
``memagent --help`` needs. ``memagent.cli.main.app`` (for tests and embedding) has everything.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Optional, Sequence

import typer

from memagent import __version__
from memagent.cli.common import EXIT_USAGE, RootOption, fail

SUBCOMMANDS = {
    "tasks": "The task graph in .tasks/: list, show, ready, blocked, tree, add, update, done, cancel, check.",
    "memory": "Long-term memory: list, show, search, add, edit, forget, stats, export, import, reindex, profile, review.",
    "sessions": "Transcripts in .transcripts/: list sessions, show one, prune old ones, rm one.",
    "doctor": "Paths, model, key, versions, embedding backend and store health.",
    "skills": "Skills (SKILL.md playbooks): list, new NAME, new --from CARD_ID.",
    "mcp": "MCP: list the servers memagent uses (list); serve its memory and tasks to other agents (serve).",
    "trust": "Trust this project's .memagent.toml to widen permissions (--revoke, --status).",
    "rewind": "Restore files and conversation to the start of an earlier user turn (--to N, --list).",
}
# typer's shell completion runs the program with this variable set (it needs every sub-app)
COMPLETION_VAR = "_MEMAGENT_COMPLETE"
FIRST_MESSAGE_OPTION = "--first-message"  # what a bare prompt (``memagent "fix the bug"``) becomes
PICK_OPTION = "--pick-session"  # what ``-r`` without an id becomes
COMPLETION_OPTIONS = frozenset({"--install-completion", "--show-completion"})
# chat options that take a value: the token after them is never a sub-command
_VALUE_OPTIONS = {"-p", "--print", "-r", "--resume", "-C", "--root", "-m", "--model", "--output-format", "--max-turns", "--permission-mode"}


def _new_app() -> typer.Typer:
    return typer.Typer(
        name="memagent",
        help=(
            "A local-first coding agent for the terminal that never loses the thread.\n\n"
            'memagent "fix the failing test" starts the chat with that first message.'
        ),
        no_args_is_help=False,
        add_completion=True,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )


def _mount(app: typer.Typer, name: str) -> None:
    if name == "rewind":
        from memagent.cli import rewind

        app.command("rewind", help=SUBCOMMANDS[name])(rewind.rewind)
        return
    if name == "trust":
        from memagent.cli import trust

        app.command("trust", help=SUBCOMMANDS[name])(trust.trust)
        return
    if name == "doctor":
        from memagent.cli import doctor

        app.command("doctor", help=SUBCOMMANDS[name])(doctor.doctor)
        return
    if name == "memory":
        from memagent.cli import memory, memory_learn

        if "profile" not in {c.name for c in memory.app.registered_commands}:
            memory.app.command("profile")(memory_learn.profile_command)
            memory.app.command("review")(memory_learn.review_command)
        sub = memory.app
    elif name == "mcp":
        from memagent.cli import mcp

        sub = mcp.app
    elif name == "tasks":
        from memagent.cli import tasks

        sub = tasks.app
    elif name == "skills":
        from memagent.cli import skills

        sub = skills.app
    else:
        from memagent.cli import sessions

        sub = sessions.app
    app.add_typer(sub, name=name, help=SUBCOMMANDS[name])


def _mount_placeholder(app: typer.Typer, name: str) -> None:
    if name in ("doctor", "trust", "rewind"):
        app.command(name, help=SUBCOMMANDS[name])(lambda: None)
    else:
        app.add_typer(typer.Typer(), name=name, help=SUBCOMMANDS[name])


def build_app(real: Sequence[str] | None = None) -> typer.Typer:
    """The CLI with the named sub-apps mounted for real (all when ``real`` is None)."""
    app = _new_app()
    app.callback(invoke_without_command=True)(main)
    for name in SUBCOMMANDS:
        if real is None or name in real:
            _mount(app, name)
        else:
            _mount_placeholder(app, name)
    return app


@functools.cache
def _full_app() -> typer.Typer:
    return build_app()


def __getattr__(name: str) -> typer.Typer:
    if name == "app":
        return _full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def value_options() -> frozenset[str]:
    """The chat options that take a value (the token after them is never a prompt or command).

    Read from :func:`main`'s signature, so a new option cannot be forgotten here."""
    import inspect

    from typer.models import OptionInfo

    names: set[str] = set()
    for parameter in inspect.signature(main).parameters.values():
        info = parameter.default
        if isinstance(info, OptionInfo) and str(parameter.annotation) != "bool":
            names.update(decl for decl in info.param_decls if decl.startswith("-"))
    return frozenset(names)


def _positionals(argv: Sequence[str], takes_value: frozenset[str]) -> list[int]:
    """Indexes of the tokens that are neither options nor option values."""
    found: list[int] = []
    skip_value = False
    for index, arg in enumerate(argv):
        if skip_value:
            skip_value = False
        elif arg == "--":
            return found + list(range(index + 1, len(argv)))
        elif arg in takes_value:
            skip_value = True
        elif not arg.startswith("-") or arg == "-":
            found.append(index)
    return found


def invoked_subcommand(argv: Sequence[str]) -> str | None:
    """The sub-command a command line names, if any (without parsing it for real)."""
    positions = _positionals(argv, value_options())
    if positions and argv[positions[0]] in SUBCOMMANDS:
        return argv[positions[0]]
    return None


def _check_text(argv: Sequence[str]) -> None:
    """Arguments that are not valid UTF-8 reach Python as lone surrogates: refuse them."""
    for position, arg in enumerate(argv, start=1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            fail(f"argument {position} ({shown!r}) is not valid UTF-8 text", EXIT_USAGE)


def _near_subcommand(word: str) -> str | None:
    import difflib

    if any(ch.isspace() for ch in word):
        return None
    close = difflib.get_close_matches(word.lower(), SUBCOMMANDS, n=1, cutoff=0.75)
    return close[0] if close else None


def rewrite_argv(argv: Sequence[str]) -> list[str]:
    """Turn the shorthands into the options :func:`main` parses.

    ``memagent "fix the bug" --yes`` → the bare words become the REPL's first message (a
    sub-command name in first position keeps priority); ``-r`` with no id → a session picker.
    A single word that looks like a mistyped sub-command is refused rather than sent.
    """
    args = list(argv)
    if invoked_subcommand(args) is not None or COMPLETION_OPTIONS & set(args):
        return args
    for flag in ("-r", "--resume"):
        if flag in args:
            index = args.index(flag)
            following = args[index + 1] if index + 1 < len(args) else None
            if following is None or (following.startswith("-") and following != "-") or " " in following:
                args[index] = PICK_OPTION
    positions = _positionals(args, value_options())
    if not positions or args[positions[0]] in SUBCOMMANDS:
        return args
    words = [args[i] for i in positions]
    if len(words) == 1 and (guess := _near_subcommand(words[0])):
        fail(f"no such command '{words[0]}'; did you mean '{guess}'? (to send it as a message: -p or quotes with more words)",
             EXIT_USAGE)
    rest = [arg for i, arg in enumerate(args) if i not in set(positions) and arg != "--"]
    return rest + [FIRST_MESSAGE_OPTION, " ".join(words)]


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"memagent {__version__}\n")
        raise typer.Exit()


# Longer than 60 lines: typer declares every top-level option in the signature.
def main(
    ctx: typer.Context,
    prompt: Optional[str] = typer.Option(
        None, "-p", "--print", metavar="PROMPT",
        help='Run one prompt to completion, print the answer and exit ("-" reads stdin).',
    ),
    continue_: bool = typer.Option(False, "-c", "--continue", help="Continue the latest session in this project."),
    resume: Optional[str] = typer.Option(
        None, "-r", "--resume", metavar="ID", help="Resume a session by id (alone: pick from the recent ones)."
    ),
    root: Optional[Path] = RootOption,
    yes: bool = typer.Option(False, "-y", "--yes", help="Approve every tool call without asking."),
    model: Optional[str] = typer.Option(
        None, "--model", "-m", metavar="MODEL", help="Model id (default: $MEMAGENT_MODEL or Sonnet)."
    ),
    no_memory: bool = typer.Option(False, "--no-memory", help="Run with long-term memory off."),
    permission_mode: Optional[str] = typer.Option(
        None, "--permission-mode", metavar="MODE",
        help="default | acceptEdits (file edits run without asking) | plan (read-only tools only) | bypassPermissions.",
    ),
    version: bool = typer.Option(False, "-V", "--version", callback=_version, is_eager=True, help="Show the version."),
    first_message: Optional[str] = typer.Option(None, FIRST_MESSAGE_OPTION, hidden=True),
    pick_session: bool = typer.Option(False, PICK_OPTION, hidden=True),
    output_format: Optional[str] = typer.Option(
        None, "--output-format", help="With -p: text (default), json (one result object) or stream-json (one event per line)."
    ),
    max_turns: Optional[int] = typer.Option(None, "--max-turns", help="With -p: stop after N model calls (exit 1).", min=1),
) -> None:
    """Chat with the agent in this project (default), or run a sub-command."""
    ctx.obj = {"root": root}
    if ctx.invoked_subcommand is not None:
        if prompt is not None or continue_ or resume or pick_session:
            fail("-p, -c and -r go with chat, not with a sub-command", EXIT_USAGE)
        return
    if sum((continue_, resume is not None, pick_session)) > 1:
        fail("use either -c or -r, not both", EXIT_USAGE)
    if model is not None and not model.strip():
        fail("--model: the model id is empty (leave the option out for the default)", EXIT_USAGE)
    if prompt is not None and first_message is not None:
        fail(f"give the prompt once: either -p PROMPT or as a bare argument, not both ({first_message!r})", EXIT_USAGE)
    if (output_format is not None or max_turns is not None) and prompt is None:
        fail("--output-format and --max-turns go with -p PROMPT", EXIT_USAGE)
    if permission_mode is not None:
        from memagent.permissions import MODES

        if permission_mode not in MODES:
            fail(f"--permission-mode {permission_mode!r}: use one of {', '.join(MODES)}", EXIT_USAGE)
    from memagent.cli.chat import ChatOptions, run_chat

    run_chat(
        ChatOptions(
            root=root,
            prompt=prompt,
            continue_latest=continue_,
            resume_id=resume,
            auto_approve=yes,
            model=model.strip() if model else None,
            memory=not no_memory,
            first_message=first_message,
            pick_session=pick_session,
            output_format=output_format or "text",
            max_turns=max_turns,
            permission_mode=permission_mode,
        )
    )


def _command_for(argv: Sequence[str]):
    import os

    from memagent.cli.wording import polish_help

    if COMPLETION_VAR in os.environ:
        app = build_app()
    else:
        named = invoked_subcommand(argv)
        app = build_app([named] if named else [])
    return polish_help(typer.main.get_command(app))


def run() -> None:
    """Console entry point: usage errors become one line on stderr and exit code 2."""
    try:
        argv = sys.argv[1:]
        _check_text(argv)
        argv = rewrite_argv(argv)
        command = _command_for(argv)
        code = command.main(args=argv, prog_name="memagent", standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        sys.stderr.write("\nmemagent: interrupted\n")
        sys.exit(130)
    except typer.TyperException as exc:  # typer's (vendored click) usage and parameter errors
        from memagent.cli.wording import usage_error_line

        ctx = getattr(exc, "ctx", None)
        hint = f"; see '{ctx.command_path} --help'" if ctx is not None else ""
        sys.stderr.write(f"memagent: {usage_error_line(exc)}{hint}\n")
        sys.exit(getattr(exc, "exit_code", EXIT_USAGE))
    sys.exit(code if isinstance(code, int) else 0)
