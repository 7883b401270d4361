"""`memagent trust`: trust this project's settings file, withdraw that trust, or show it.

``memagent trust`` (in the project, or with ``-C DIR``) records in ``$MEMAGENT_HOME`` that the
user trusts the project, so the settings in its ``.memagent.toml`` that widen permissions
(auto-approve, permission mode, allow rules, hooks, MCP servers, server URLs, sandbox off) are
honoured, and so is what its ``.claude/settings.json`` and ``.claude/settings.local.json`` ask
for (allow rules, a laxer ``defaultMode``, ``additionalDirectories``, hooks, ``env``). ``--revoke`` withdraws it; ``--status`` shows it with the rules saved for the project.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from memagent.cli.common import EXIT_FAILURE, EXIT_USAGE, JsonOption, RootOption, fail, print_json, resolve_paths


def trust(
    ctx: typer.Context,
    revoke: bool = typer.Option(False, "--revoke", help="Stop trusting this project's settings file."),
    status: bool = typer.Option(False, "--status", help="Show whether this project is trusted."),
    root: Optional[Path] = RootOption,
    as_json: bool = JsonOption,
) -> None:
    """Trust this project's .memagent.toml to widen permissions (--revoke undoes it)."""
    from memagent.trust import TrustError, TrustStore, requested_widening, revoke_trust, trust_project

    if revoke and status:
        fail("use either --revoke or --status, not both", EXIT_USAGE)
    paths = resolve_paths(ctx, root)
    asks = requested_widening(paths.project_config)
    try:
        if revoke:
            was = revoke_trust(paths.home, paths.root)
            record = TrustStore(paths.home).record(paths.root)
            message = f"{paths.root} is no longer trusted" if was else f"{paths.root} was not trusted"
        elif status:
            record = TrustStore(paths.home).record(paths.root)
            message = (f"{paths.root} is trusted (since {record.since})" if record.trusted
                       else f"{paths.root} is not trusted")
        else:
            record = trust_project(paths.home, paths.root)
            message = f"{paths.root} is trusted"
    except TrustError as exc:
        fail(str(exc), EXIT_FAILURE)
    from memagent.claude_settings import project_widening

    claude = project_widening(paths)
    if as_json:
        print_json({"root": str(paths.root), "trusted": record.trusted, "since": record.since,
                    "settings_file_asks_for": asks, "claude_settings_ask_for": dict(claude),
                    "saved_rules": record.allow})
        return
    typer.echo(message)
    verb = "is honoured" if record.trusted else "is ignored"
    for name, keys in [(paths.project_config.name, asks), *claude]:
        if keys:
            typer.echo(f"  {name} asks for: {', '.join(keys)} ({verb})")
    if record.allow:
        typer.echo(f"  rules saved for this project: {', '.join(record.allow)}")
