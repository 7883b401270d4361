"""Entry point: ``memagent`` (chat), ``-p`` (one-shot), and the sub-apps."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from memagent import __version__
from memagent.cli.common import EXIT_USAGE, RootOption, fail

app = typer.Typer(
    name="memagent",
    help="A local-first coding agent for the terminal that never loses the thread.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _register_subapps() -> None:
    from memagent.cli import doctor, memory, memory_learn, sessions, tasks

    memory.app.command("profile")(memory_learn.profile_command)
    memory.app.command("review")(memory_learn.review_command)
    app.add_typer(tasks.app, name="tasks")
    app.add_typer(memory.app, name="memory")
    app.add_typer(sessions.app, name="sessions")
    app.command("doctor")(doctor.doctor)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"memagent {__version__}\n")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
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


_register_subapps()


def run() -> None:
    """Console entry point: usage errors become one line on stderr and exit code 2."""
    try:
        code = app(standalone_mode=False)
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
