"""Entry point: ``memagent`` (chat), ``-p`` (one-shot), and the sub-apps.

Start-up matters (DESIGN §11): typer builds a pydantic coercer for every parameter of every
command it parses, and each sub-app pulls in its own room. So the console script mounts only the
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
    "sessions": "Transcripts in .transcripts/: list sessions, show one.",
    "doctor": "Paths, model, key, versions, embedding backend and store health.",
    "mcp": "MCP: list the servers memagent uses (list); serve its memory and tasks to other agents (serve).",
}
# chat options that take a value: the token after them is never a sub-command
_VALUE_OPTIONS = {"-p", "--print", "-r", "--resume", "-C", "--root", "-m", "--model"}


def _new_app() -> typer.Typer:
    return typer.Typer(
        name="memagent",
        help="A local-first coding agent for the terminal that never loses the thread.",
        no_args_is_help=False,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )


def _mount(app: typer.Typer, name: str) -> None:
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
    else:
        from memagent.cli import sessions

        sub = sessions.app
    app.add_typer(sub, name=name, help=SUBCOMMANDS[name])


def _mount_placeholder(app: typer.Typer, name: str) -> None:
    if name == "doctor":
        app.command("doctor", help=SUBCOMMANDS[name])(lambda: None)
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


def invoked_subcommand(argv: Sequence[str]) -> str | None:
    """The sub-command a command line names, if any (without parsing it for real)."""
    skip_value = False
    for arg in argv:
        if skip_value:
            skip_value = False
        elif arg in _VALUE_OPTIONS:
            skip_value = True
        elif not arg.startswith("-"):
            return arg if arg in SUBCOMMANDS else None
    return None


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"memagent {__version__}\n")
        raise typer.Exit()


def main(
    ctx: typer.Context,
    prompt: Optional[str] = typer.Option(
        None, "-p", "--print", help='Run one prompt to completion, print the answer and exit ("-" reads stdin).'
    ),
    continue_: bool = typer.Option(False, "-c", "--continue", help="Continue the latest session in this project."),
    resume: Optional[str] = typer.Option(None, "-r", "--resume", help="Resume the session with this id."),
    root: Optional[Path] = RootOption,
    yes: bool = typer.Option(False, "-y", "--yes", help="Approve every tool call without asking."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Model id (default: $MEMAGENT_MODEL or Sonnet)."),
    no_memory: bool = typer.Option(False, "--no-memory", help="Run with long-term memory off."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
) -> None:
    """Chat with the agent in this project (default), or run a sub-command."""
    ctx.obj = {"root": root}
    if ctx.invoked_subcommand is not None:
        if prompt is not None or continue_ or resume:
            fail("-p, -c and -r go with chat, not with a sub-command", EXIT_USAGE)
        return
    if continue_ and resume:
        fail("use either -c or -r, not both", EXIT_USAGE)
    from memagent.cli.chat import ChatOptions, run_chat

    run_chat(
        ChatOptions(
            root=root,
            prompt=prompt,
            continue_latest=continue_,
            resume_id=resume,
            auto_approve=yes,
            model=model,
            memory=not no_memory,
        )
    )



def run() -> None:
    """Console entry point: usage errors become one line on stderr and exit code 2."""
    argv = sys.argv[1:]
    named = invoked_subcommand(argv)
    app = build_app([named] if named else [])
    try:
        code = app(argv, prog_name="memagent", standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        sys.stderr.write("\nmemagent: interrupted\n")
        sys.exit(130)
    except typer.TyperException as exc:  # typer's (vendored click) usage and parameter errors
        ctx = getattr(exc, "ctx", None)
        hint = f"; see '{ctx.command_path} --help'" if ctx is not None else ""
        sys.stderr.write(f"memagent: {exc.format_message().rstrip('.')}{hint}\n")
        sys.exit(getattr(exc, "exit_code", EXIT_USAGE))
    sys.exit(code if isinstance(code, int) else 0)
