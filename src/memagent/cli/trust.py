"""`memagent trust`: trust this project as it is now, withdraw that trust, or show it.

``memagent trust`` (in the project, or with ``-C DIR``) records in ``$MEMAGENT_HOME`` that the
user trusts the project — pinned to the current content of its power files (``.memagent.toml``,
``.mcp.json``, ``.claude/settings.json``, ``.claude/settings.local.json``) — so what they widen
(auto-approve, permission mode, allow rules, hooks, MCP servers, server URLs, sandbox off; from
Claude Code's files: allow rules, a laxer ``defaultMode``, ``additionalDirectories``, hooks,
``env``) is honoured until one of them changes. ``--revoke`` withdraws it; ``--status`` shows it:
the files pinned, which changed since (with the diff), what each settings file asks for, and the
rules saved for the project.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from memagent.cli.common import EXIT_FAILURE, EXIT_USAGE, JsonOption, RootOption, fail, print_json, resolve_paths

if TYPE_CHECKING:
    from memagent.trust import TrustReport


def trust(
    ctx: typer.Context,
    revoke: bool = typer.Option(False, "--revoke", help="Stop trusting this project's files."),
    status: bool = typer.Option(False, "--status", help="Show whether this project is trusted, and what changed."),
    root: Path | None = RootOption,
    as_json: bool = JsonOption,
) -> None:
    """Trust this project's .memagent.toml, .mcp.json and .claude settings as they are now (--revoke undoes it)."""
    from memagent.trust import TrustError, change_diff, revoke_trust, trust_project, trust_report

    if revoke and status:
        fail("use either --revoke or --status, not both", EXIT_USAGE)
    paths = resolve_paths(ctx, root)
    try:
        if revoke:
            was = revoke_trust(paths.home, paths.root)
            message = f"{paths.root} is no longer trusted" if was else f"{paths.root} was not trusted"
        elif status:
            message = ""
        else:
            trust_project(paths.home, paths.root)
            message = f"{paths.root} is trusted as it is now"
    except TrustError as exc:
        fail(str(exc), EXIT_FAILURE)
    from memagent.claude_settings import project_widening

    report = trust_report(paths.home, paths.root, paths.project_config)
    claude = project_widening(paths)
    diffs = {name: change_diff(paths.home, paths.root, name) for name in report["changed"]}
    if as_json:
        print_json(
            {
                "root": str(paths.root),
                **report,
                "settings_file_asks_for": report["project_file_asks_for"],
                "claude_settings_ask_for": dict(claude),
                "diffs": diffs,
            }
        )
        return
    typer.echo(message or _status_line(paths.root, report))
    for line in describe_trust(report, paths.project_config.name):
        typer.echo(line)
    for name, keys in claude:
        honoured = report["trusted"] and name not in report["changed"]
        typer.echo(f"  {name} asks for: {', '.join(keys)} ({'is honoured' if honoured else 'is ignored'})")
    for text in diffs.values():
        for line in text.splitlines():
            typer.echo("    " + _printable(line))


def _status_line(root: Path, report: TrustReport) -> str:
    if not report["trusted"]:
        return f"{root} is not trusted"
    if report["changed"]:
        return f"{root} was trusted (since {report['since']}), but {', '.join(report['changed'])} changed since"
    return f"{root} is trusted (since {report['since']})"


def describe_trust(report: TrustReport, settings_name: str) -> list[str]:
    """The trust lines ``trust --status`` and ``doctor`` share: files pinned, asks, saved rules."""
    lines = []
    if report["trusted"]:
        shown = []
        for name, entry in report["files"].items():
            state = "changed since" if entry["changed"] else ("pinned" if entry["present"] else "pinned absent")
            shown.append(f"{name} ({state})")
        lines.append("  files: " + ", ".join(shown))
    asks = report["project_file_asks_for"]
    if asks:
        honoured = report["trusted"] and settings_name not in report["changed"]
        lines.append(f"  {settings_name} asks for: {', '.join(asks)} ({'is honoured' if honoured else 'is ignored'})")
    if report["saved_rules"]:
        lines.append(f"  rules saved for this project: {', '.join(report['saved_rules'])}")
    return lines


def _printable(line: str) -> str:
    from memagent.ui.safe_text import printable

    return printable(line)
