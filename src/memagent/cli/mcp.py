"""`memagent mcp`: the MCP servers memagent uses (``list``) and memagent as a server (``serve``).

``memagent mcp list`` starts every configured server, waits for them (bounded by
``mcp_connect_timeout``), prints each one's status and tools (``--json`` for objects) and stops
them again; exit 1 when a configured server failed. ``memagent mcp serve`` speaks MCP on
stdin/stdout until the client hangs up: the project's memory and task graph for Claude Code,
Codex, Cursor or any other MCP client.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from memagent.cli.common import EXIT_FAILURE, EXIT_USAGE, JsonOption, RootOption, fail, print_json, resolve_paths

app = typer.Typer(
    help="MCP: list the servers memagent uses; serve memagent's memory and tasks to other agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _settings(paths):
    from memagent.config import ConfigError, load_settings
    from memagent.trust import is_trusted

    try:
        return load_settings(paths, trusted=is_trusted(paths.home, paths.root))
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)


@app.command("list")
def list_servers(ctx: typer.Context, root: Path | None = RootOption, as_json: bool = JsonOption) -> None:
    """Start the configured MCP servers, show their status and tools, stop them."""
    from memagent.mcp_bridge.config import PROJECT_FILE, USER_FILE, load_mcp_config
    from memagent.mcp_bridge.manager import FAILED, McpManager
    from memagent.mcp_bridge.report import render_rows, server_rows

    paths = resolve_paths(ctx, root)
    settings = _settings(paths)
    env = dict(os.environ)
    from memagent.trust import is_trusted

    trusted = is_trusted(paths.home, paths.root)
    config = load_mcp_config(paths.home / USER_FILE, paths.root / PROJECT_FILE, env, project_trusted=trusted)
    manager = McpManager(config.servers, env=env, cwd=paths.root, connect_timeout=settings.mcp_connect_timeout)
    try:
        manager.start()
        manager.wait_ready(settings.mcp_connect_timeout + 1)
        rows = server_rows(config, manager.statuses())
    finally:
        manager.close()
    if as_json:
        print_json({"servers": rows, "problems": config.problems})
    else:
        typer.echo(render_rows(rows, config.problems))
    if config.problems or any(row["status"] in (FAILED, "invalid") for row in rows):
        raise typer.Exit(EXIT_FAILURE)


@app.command("approve")
def approve(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The server whose tool list to approve."),
    root: Path | None = RootOption,
) -> None:
    """Start a server, show its tools, and approve that list for this project."""
    from memagent.features.mcp_client import approve_tool_list
    from memagent.mcp_bridge.config import PROJECT_FILE, USER_FILE, load_mcp_config
    from memagent.mcp_bridge.manager import READY, McpManager
    from memagent.trust import TrustError, is_trusted

    paths = resolve_paths(ctx, root)
    settings = _settings(paths)
    env = dict(os.environ)
    config = load_mcp_config(
        paths.home / USER_FILE, paths.root / PROJECT_FILE, env, project_trusted=is_trusted(paths.home, paths.root)
    )
    if not any(server.name == name for server in config.servers):
        fail(
            f"no MCP server named {name!r} is configured for this project (`memagent mcp list` shows them)", EXIT_USAGE
        )
    manager = McpManager(
        [s for s in config.servers if s.name == name],
        env=env,
        cwd=paths.root,
        connect_timeout=settings.mcp_connect_timeout,
    )
    try:
        manager.start()
        manager.wait_ready(settings.mcp_connect_timeout + 1)
        status = next(s for s in manager.statuses() if s.name == name)
    finally:
        manager.close()
    if status.status != READY:
        fail(f"MCP server {name} did not start: {status.reason}", EXIT_FAILURE)
    for tool in status.tools:
        typer.echo(f"  {tool.name}: {' '.join(tool.description.split())[:100]}")
    try:
        approve_tool_list(paths.home, paths.root, status)
    except TrustError as exc:
        fail(str(exc), EXIT_FAILURE)
    typer.echo(f"approved the {len(status.tools)} tools of {name} for {paths.root}")


@app.command("serve")
def serve(
    ctx: typer.Context,
    root: Path | None = RootOption,
    allow_user_scope: bool = typer.Option(
        False, "--allow-user-scope", help="Let clients save user-scope memories (they reach every project's profile)."
    ),
) -> None:
    """Serve this project's memory and task graph over MCP on stdin/stdout.

    Clients save project-scope memories only, unless --allow-user-scope is given.
    Claude Code: claude mcp add memagent -- memagent mcp serve
    """
    from memagent.mcp_serve import serve_stdio

    paths = resolve_paths(ctx, root)
    serve_stdio(paths, _settings(paths), allow_user_scope=allow_user_scope)
