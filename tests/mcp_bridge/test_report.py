"""`/mcp` in the REPL and the text `memagent mcp list` prints."""

from __future__ import annotations

from types import SimpleNamespace

from memagent.features.mcp_client import McpClientFeature
from memagent.mcp_bridge.config import BrokenServer, McpConfig, StdioServer
from memagent.mcp_bridge.manager import RemoteTool, ServerStatus
from memagent.mcp_bridge.report import render_rows, server_rows
from memagent.ui.commands import run_command


def test_rows_cover_ready_failed_invalid_and_untrusted_servers():
    config = McpConfig(broken=[BrokenServer("keyless", "environment variable KEY is not set")], untrusted=["repo"])
    statuses = [
        ServerStatus(
            "files",
            "stdio",
            "npx files",
            "user",
            "ready",
            tools=(RemoteTool("files", "read", "Read a file.\nMore.", {}),),
        ),
        ServerStatus("web", "http", "https://x/mcp", "project", "failed", reason="did not answer within 30s"),
    ]
    text = render_rows(server_rows(config, statuses))
    assert text.splitlines() == [
        "files [ready, 1 tools] (user) stdio npx files",
        "    read — Read a file.",
        "web [failed] (project) http https://x/mcp — did not answer within 30s",
        "keyless [invalid] (user) — environment variable KEY is not set",
        "repo [untrusted] (project) — .mcp.json servers are used only in a trusted project",
    ]


def test_nothing_configured_says_how_to_configure():
    assert "Add them to .mcp.json" in render_rows([])


def _session_with(*features):
    """A session as the slash commands query it: its features, by class."""
    return SimpleNamespace(
        features=list(features), feature=lambda kind: next((f for f in features if isinstance(f, kind)), None)
    )


def test_slash_mcp_shows_the_sessions_servers(tmp_path):
    config = McpConfig(servers=[StdioServer("toy", "toy-server")], broken=[BrokenServer("bad", "no command")])
    client = McpClientFeature(config, env={}, root=tmp_path)
    reply = run_command("/mcp", lambda: _session_with(client))
    assert reply.text.splitlines() == ["toy [starting] (user) stdio toy-server", "bad [invalid] (user) — no command"]
    assert run_command("/mcp", lambda: _session_with()).text == "MCP is not enabled in this session."
    assert "/mcp" in run_command("/help", lambda: None).text
