"""`memagent tasks` commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="tasks", no_args_is_help=False, add_completion=False, pretty_exceptions_enable=False)
