"""Entry point: ``memagent`` (chat), ``-p`` (one-shot), and the sub-apps.

Start-up matters (`memagent --help` and `memagent tasks` stay within 1.5× of a bare typer app):
typer builds a pydantic coercer for every parameter of every command it parses, and each sub-app pulls in its own room. So the console script mounts only the
sub-app the command line names; the others appear as help-only placeholders, which is all
``memagent --help`` needs. ``memagent.cli.main.app`` (for tests and embedding) has everything.
"""

from __future__ import annotations

import atexit
import functools
import gc
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import typer

from memagent import __version__
from memagent.cli.common import EXIT_USAGE, Failure, RootOption, fail

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
_VALUE_OPTIONS = {
    "-p",
    "--print",
    "-r",
    "--resume",
    "-C",
    "--root",
    "-m",
    "--model",
    "--output-format",
    "--max-turns",
    "--permission-mode",
}


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
        from memagent.cli import memory, memory_learn, memory_reflect

        if "profile" not in {c.name for c in memory.app.registered_commands}:
            memory.app.command("profile")(memory_learn.profile_command)
            memory.app.command("review")(memory_learn.review_command)
            memory.app.command("reflect")(memory_reflect.reflect_command)
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


def _option_names(with_value: bool | None) -> frozenset[str]:
    import inspect

    from typer.models import OptionInfo

    names: set[str] = set()
    for parameter in inspect.signature(main).parameters.values():
        info = parameter.default
        if isinstance(info, OptionInfo) and (with_value is None or (str(parameter.annotation) != "bool") == with_value):
            names.update(decl for decl in info.param_decls or () if decl.startswith("-"))
    return frozenset(names)


def value_options() -> frozenset[str]:
    """The chat options that take a value (the token after them is never a prompt or command).

    Read from :func:`main`'s signature, so a new option cannot be forgotten here."""
    return _option_names(with_value=True)


def option_names() -> frozenset[str]:
    """Every option of the chat command, flags included (and ``--help``)."""
    return _option_names(with_value=None) | {"-h", "--help"}


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
    A single word that looks like a mistyped sub-command is refused rather than sent. Claude
    Code's spellings are accepted (see :mod:`memagent.cli.claude_flags`): ``-p`` as a flag,
    options with several values; its options memagent lacks are refused by name.
    """
    from memagent.cli import claude_flags

    args = list(argv)
    if invoked_subcommand(args) is not None or COMPLETION_OPTIONS & set(args):
        return args
    try:
        claude_flags.refuse_unsupported(args, value_options())
    except claude_flags.FlagError as exc:
        fail(str(exc), EXIT_USAGE)
    args = claude_flags.expand_variadic(args, option_names())
    args, print_words = claude_flags.print_flag_form(args, option_names())
    for flag in ("-r", "--resume"):
        if flag in args:
            index = args.index(flag)
            following = args[index + 1] if index + 1 < len(args) else None
            if following is None or (following.startswith("-") and following != "-") or " " in following:
                args[index] = PICK_OPTION
    positions = _positionals(args, value_options())
    if print_words is not None:  # -p as a flag: the bare words are the prompt, else stdin
        words = [args[i] for i in positions]
        rest = [arg for i, arg in enumerate(args) if i not in set(positions) and arg != "--"]
        return rest + ["-p", " ".join(words) if words else "-"]
    if not positions or args[positions[0]] in SUBCOMMANDS:
        return args
    words = [args[i] for i in positions]
    if len(words) == 1 and (guess := _near_subcommand(words[0])):
        fail(
            f"no such command '{words[0]}'; did you mean '{guess}'? (to send it as a message: -p or quotes with more words)",
            EXIT_USAGE,
        )
    rest = [arg for i, arg in enumerate(args) if i not in set(positions) and arg != "--"]
    return rest + [FIRST_MESSAGE_OPTION, " ".join(words)]


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"memagent {__version__}\n")
        raise typer.Exit()


# Longer than 60 lines: typer declares every top-level option in the signature.
def main(
    ctx: typer.Context,
    prompt: str | None = typer.Option(
        None,
        "-p",
        "--print",
        metavar="PROMPT",
        help='Run one prompt to completion, print the answer and exit ("-", or no PROMPT, reads stdin).',
    ),
    continue_: bool = typer.Option(False, "-c", "--continue", help="Continue the latest session in this project."),
    resume: str | None = typer.Option(
        None, "-r", "--resume", metavar="ID", help="Resume a session by id (alone: pick from the recent ones)."
    ),
    root: Path | None = RootOption,
    yes: bool = typer.Option(False, "-y", "--yes", help="Approve every tool call without asking."),
    model: str | None = typer.Option(
        None, "--model", "-m", metavar="MODEL", help="Model id (default: $MEMAGENT_MODEL or Sonnet)."
    ),
    no_memory: bool = typer.Option(False, "--no-memory", help="Run with long-term memory off."),
    permission_mode: str | None = typer.Option(
        None,
        "--permission-mode",
        metavar="MODE",
        help="default | acceptEdits (file edits run without asking) | plan (read-only tools only) | bypassPermissions.",
    ),
    skip_permissions: bool = typer.Option(
        False,
        "--dangerously-skip-permissions",
        help="Same as --permission-mode bypassPermissions (deny rules still apply).",
    ),
    allowed_tools: list[str] | None = typer.Option(
        None,
        "--allowedTools",
        "--allowed-tools",
        metavar="RULES",
        help='Allow these tools for this run without asking: permission rules, e.g. "Read Bash(git log:*)".',
    ),
    disallowed_tools: list[str] | None = typer.Option(
        None,
        "--disallowedTools",
        "--disallowed-tools",
        metavar="RULES",
        help='Refuse these tools for this run: permission rules, e.g. "Bash(rm:*) WebFetch".',
    ),
    add_dir: list[Path] | None = typer.Option(
        None, "--add-dir", metavar="DIR", help="Let the file tools and commands also read and write DIR."
    ),
    mcp_config: list[str] | None = typer.Option(
        None, "--mcp-config", metavar="FILE|JSON", help='More MCP servers: a file or a JSON string with "mcpServers".'
    ),
    system_prompt: str | None = typer.Option(
        None, "--system-prompt", metavar="TEXT", help="Use TEXT instead of memagent's base system prompt."
    ),
    system_prompt_file: Path | None = typer.Option(
        None, "--system-prompt-file", metavar="FILE", help="--system-prompt from a file."
    ),
    append_system_prompt: str | None = typer.Option(
        None, "--append-system-prompt", metavar="TEXT", help="Add TEXT at the end of the system prompt."
    ),
    append_system_prompt_file: Path | None = typer.Option(
        None, "--append-system-prompt-file", metavar="FILE", help="--append-system-prompt from a file."
    ),
    session_id: str | None = typer.Option(
        None, "--session-id", metavar="UUID", help="Start a new session under this id (a UUID); -r UUID continues it."
    ),
    version: bool = typer.Option(False, "-V", "--version", callback=_version, is_eager=True, help="Show the version."),
    first_message: str | None = typer.Option(None, FIRST_MESSAGE_OPTION, hidden=True),
    pick_session: bool = typer.Option(False, PICK_OPTION, hidden=True),
    output_format: str | None = typer.Option(
        None,
        "--output-format",
        help="With -p: text (default), json (one result object) or stream-json (one message per line).",
    ),
    input_format: str | None = typer.Option(
        None,
        "--input-format",
        help="With -p: text (default) or stream-json (user messages as JSON lines on stdin, a turn each).",
    ),
    max_turns: int | None = typer.Option(
        None, "--max-turns", help="With -p: stop after N model calls (exit 1).", min=1
    ),
    verbose: bool = typer.Option(
        False, "--verbose", help="Accepted for Claude Code's stream-json (always complete here)."
    ),
    replay_user_messages: bool = typer.Option(
        False, "--replay-user-messages", help="With stream-json input and output: echo each input message back."
    ),
) -> None:
    """Chat with the agent in this project (default), or run a sub-command."""
    ctx.obj = {"root": root}
    if ctx.invoked_subcommand is not None:
        if prompt is not None or continue_ or resume or pick_session:
            fail("-p, -c and -r go with chat, not with a sub-command", EXIT_USAGE)
        return
    from memagent.cli.chat import ChatOptions, run_chat

    options = ChatOptions(
        root=root,
        prompt=prompt,
        continue_latest=continue_,
        resume_id=resume,
        auto_approve=yes,
        model=model,
        memory=not no_memory,
        first_message=first_message,
        pick_session=pick_session,
        output_format=output_format or "text",
        max_turns=max_turns,
        permission_mode=permission_mode,
        input_format=input_format or "text",
        replay_user_messages=replay_user_messages,
    )
    try:
        _check_chat(options, output_format_given=output_format is not None, skip_permissions=skip_permissions)
        _apply_claude_flags(
            options,
            allowed_tools=allowed_tools or (),
            disallowed_tools=disallowed_tools or (),
            add_dirs=add_dir or (),
            mcp_configs=mcp_config or (),
            session_id=session_id,
            system_prompt=(system_prompt, system_prompt_file),
            append_system_prompt=(append_system_prompt, append_system_prompt_file),
        )
        run_chat(options)
    except Failure as exc:  # a usage or setup error before any turn: JSON too, when JSON was asked for
        if options.output_format in ("json", "stream-json"):
            print_error_result(exc.message)
        raise


def _check_chat(options, *, output_format_given: bool, skip_permissions: bool) -> None:
    """The chat command's own usage errors (one line, exit 2)."""
    if sum((options.continue_latest, options.resume_id is not None, options.pick_session)) > 1:
        fail("use either -c or -r, not both", EXIT_USAGE)
    if options.model is not None:
        if not options.model.strip():
            fail("--model: the model id is empty (leave the option out for the default)", EXIT_USAGE)
        options.model = options.model.strip()
    if options.prompt is not None and options.first_message is not None:
        fail(
            f"give the prompt once: either -p PROMPT or as a bare argument, not both ({options.first_message!r})",
            EXIT_USAGE,
        )
    if (output_format_given or options.max_turns is not None) and not options.headless:
        fail("--output-format and --max-turns go with -p PROMPT", EXIT_USAGE)
    options.permission_mode = _permission_mode(options.permission_mode, skip_permissions)


def _apply_claude_flags(options, **flags) -> None:
    from memagent.cli.claude_flags import FlagError

    try:
        options.apply_claude_flags(**flags)
    except FlagError as exc:
        fail(str(exc), EXIT_USAGE)


def print_error_result(reason: str) -> None:
    """A run that asked for JSON output and failed before its turn also gets the reason as a
    JSON ``result`` object on stdout (the one line on stderr stays)."""
    from memagent.ui.headless_shapes import setup_error_result
    from memagent.ui.safe_text import json_line

    sys.stdout.write(json_line(setup_error_result(reason)) + "\n")
    sys.stdout.flush()


def _permission_mode(mode: str | None, skip_permissions: bool) -> str | None:
    from memagent.permissions import MODES

    if mode is not None and mode not in MODES:
        fail(f"--permission-mode {mode!r}: use one of {', '.join(MODES)}", EXIT_USAGE)
    if skip_permissions:
        if mode not in (None, "bypassPermissions"):
            fail(f"--dangerously-skip-permissions contradicts --permission-mode {mode}", EXIT_USAGE)
        return "bypassPermissions"
    return mode


def _command_for(argv: Sequence[str]):
    import os

    from memagent.cli.wording import polish_help

    if COMPLETION_VAR in os.environ:
        app = build_app()
    else:
        named = invoked_subcommand(argv)
        app = build_app([named] if named else [])
    return polish_help(typer.main.get_command(app))


def wants_json(argv: Sequence[str]) -> bool:
    """Whether the command line asks for json or stream-json output (read before parsing, so a
    usage error can answer in JSON too)."""
    for index, token in enumerate(argv):
        if token == "--":
            return False
        if token.startswith("--output-format="):
            value = token.partition("=")[2]
        elif token == "--output-format" and index + 1 < len(argv):
            value = argv[index + 1]
        else:
            continue
        return value in ("json", "stream-json")
    return False


def _exit(argv: Sequence[str], code: int, message: str | None) -> NoReturn:
    """Exit with ``code``; an error before the chat command ran (the command line itself) is
    also a JSON ``result`` when the command line asked for JSON output."""
    if code and message and wants_json(argv):
        print_error_result(message)
    sys.exit(code)


YOUNG_COLLECTION_OBJECTS = 10_000  # allocations between two collections of the youngest generation


def run() -> None:
    """Console entry point: usage errors become one line on stderr and exit code 2.

    The cyclic garbage collector runs its youngest generation every
    :data:`YOUNG_COLLECTION_OBJECTS` allocations instead of 700: start-up builds hundreds of
    thousands of long-lived objects (the model SDK's classes), and 80 collections walking them
    cost a ``-p`` run ≈0.1 CPU-s. When the process ends, after every other exit handler, the
    objects still alive are frozen out of the collector: the interpreter's final collections
    would otherwise walk the SDK's objects again and again (≈0.4 CPU-s per run). Files memagent
    writes are closed or unbuffered by then, so nothing waits on those collections."""
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_COLLECTION_OBJECTS), middle, old)
    atexit.register(gc.freeze)
    argv = sys.argv[1:]
    try:
        _check_text(argv)
        rewritten = rewrite_argv(argv)
        code = _command_for(rewritten).main(args=rewritten, prog_name="memagent", standalone_mode=False)
    except typer.Exit as exc:
        _exit(argv, exc.exit_code, getattr(exc, "message", None))
    except (KeyboardInterrupt, typer.Abort):
        sys.stderr.write("\nmemagent: interrupted\n")
        _exit(argv, 130, "interrupted")
    except typer.TyperException as exc:  # typer's (vendored click) usage and parameter errors
        from memagent.cli.wording import usage_error_line

        ctx = getattr(exc, "ctx", None)
        hint = f"; see '{ctx.command_path} --help'" if ctx is not None else ""
        line = usage_error_line(exc)
        sys.stderr.write(f"memagent: {line}{hint}\n")
        _exit(argv, getattr(exc, "exit_code", EXIT_USAGE), line)
    sys.exit(code if isinstance(code, int) else 0)
