"""`memagent memory` commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="memory", no_args_is_help=False, add_completion=False, pretty_exceptions_enable=False)
