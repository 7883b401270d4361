"""Helpers shared by the CLI sub-apps: root resolution, one-line errors, JSON output."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NoReturn

import typer

from memagent.paths import ProjectPaths, project_paths

# Exit codes: 0 success, 1 runtime failure, 2 usage error (bad flag, missing key).
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

RootOption = typer.Option(
    None, "-C", "--root", help="Project root (default: the current directory).", show_default=False
)
JsonOption = typer.Option(False, "--json", help="Print machine-readable JSON.")


class Failure(typer.Exit):
    """The exit :func:`fail` raises: it keeps the one-line message, so that a run that asked
    for JSON output can also get it as a JSON error object (see ``cli.main.run``)."""

    def __init__(self, message: str, code: int):
        super().__init__(code)
        self.message = message


def fail(message: str, code: int = EXIT_FAILURE) -> NoReturn:
    """Print ``memagent: <message>`` on stderr and exit; never a traceback for user errors."""
    sys.stderr.write(f"memagent: {message}\n")
    raise Failure(message, code)


def resolve_paths(ctx: typer.Context | None, root: Path | None = None) -> ProjectPaths:
    """A sub-command's own ``-C`` wins over the one given before the sub-command."""
    if root is None and ctx is not None:
        obj = ctx.find_root().obj or {}
        root = obj.get("root")
    if root is not None and not Path(root).is_dir():
        fail(f"project root {root} is not a directory", EXIT_USAGE)
    paths = project_paths(root)
    from memagent.tools.sandbox import clear_stale_placeholders

    clear_stale_placeholders(paths.root)  # stand-ins a killed session left, before any file is read
    return paths


def print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
