"""What ``memagent mcp list`` and the REPL's ``/mcp`` show: every server, its status and tools."""

from __future__ import annotations

from collections.abc import Sequence

from memagent.jsontypes import JsonMapping, JsonObject, json_list, json_object, json_str
from memagent.mcp_bridge.config import PROJECT_FILE, McpConfig
from memagent.mcp_bridge.manager import ServerStatus


def server_rows(config: McpConfig, statuses: Sequence[ServerStatus]) -> list[JsonObject]:
    """One dict per configured server (started, broken or skipped), in configuration order."""
    rows = [status.as_dict() for status in statuses]
    rows += [  # a server that did not start: no tools
        {"name": b.name, "origin": b.origin, "status": "invalid", "reason": b.reason, "tools": []}
        for b in config.broken
    ]
    rows += [
        {
            "name": name,
            "origin": "project",
            "status": "untrusted",
            "reason": f"{PROJECT_FILE} servers are used only in a trusted project",
            "tools": [],
        }
        for name in config.untrusted
    ]
    return rows


def render_rows(rows: Sequence[JsonMapping], problems: Sequence[str] = (), *, tool_limit: int = 12) -> str:
    """Plain text: a line per server, then its tools indented."""
    if not rows and not problems:
        return (
            "No MCP servers configured. Add them to .mcp.json (project) or $MEMAGENT_HOME/mcp.json "
            '(user): {"mcpServers": {"name": {"command": "...", "args": [...]}}}'
        )
    lines = [f"! {problem}" for problem in problems]
    for row in rows:
        where = f" {row['transport']} {row['target']}" if row.get("target") else ""
        reason = f" — {row['reason']}" if row.get("reason") else ""
        tools = [json_object(tool) for tool in json_list(row.get("tools"))]
        count = f", {len(tools)} tools" if row["status"] == "ready" else ""
        lines.append(f"{row['name']} [{row['status']}{count}] ({row['origin']}){where}{reason}")
        for tool in tools[:tool_limit]:
            first = json_str(tool.get("description")).strip().splitlines()
            task = " (runs only as an MCP task: not offered)" if tool.get("task_only") else ""
            lines.append(f"    {tool.get('name')}" + (f" — {first[0][:80]}" if first else "") + task)
        if len(tools) > tool_limit:
            lines.append(f"    … and {len(tools) - tool_limit} more")
        if row.get("prompts"):
            prompts = json_list(row.get("prompts"))
            lines.append("    prompts: " + ", ".join(f"/mcp__{row['name']}__{p}" for p in prompts))
        if row.get("resources"):
            lines.append("    resources: read with list_mcp_resources / read_mcp_resource")
        if row.get("noise"):
            lines.append(f"    ! {row['noise']}")
    return "\n".join(lines)


__all__ = ["render_rows", "server_rows"]
