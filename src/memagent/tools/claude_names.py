"""Claude Code's names for memagent's tools and their inputs: the one table of that vocabulary.

Hooks and permission rules written for Claude Code name tools and read inputs its way
(``tool_name == "Bash"``, ``tool_input["file_path"]``); each memagent tool carries its entry from
here (``Tool.claude``), so a hook gets a payload Claude Code would send and a rule can say
``Edit(src/**)``. memagent's own names keep working beside them.

| memagent | Claude Code | input as Claude Code spells it |
|---|---|---|
| ``bash`` | ``Bash`` | ``command``, ``timeout`` (milliseconds), ``description`` |
| ``read_file`` | ``Read`` | ``file_path`` (absolute), ``offset``, ``limit`` |
| ``write_file`` | ``Write`` | ``file_path``, ``content`` |
| ``edit_file`` | ``Edit`` | ``file_path``, ``old_string``, ``new_string``, ``replace_all`` |
| ``glob`` | ``Glob`` | ``pattern``, ``path`` |
| ``grep`` | ``Grep`` | ``pattern``, ``path``, ``glob`` |
| ``todo`` | ``TodoWrite`` | ``todos``: ``content``, ``status``, ``activeForm`` (and ``id``) |
| ``skill`` | ``Skill`` | ``skill`` (the name), ``file`` |
| ``list_mcp_resources`` | ``ListMcpResourcesTool`` | ``server`` |
| ``read_mcp_resource`` | ``ReadMcpResourceTool`` | ``server``, ``uri`` |
| ``task`` | ``Task`` | ``description``, ``prompt``, ``subagent_type`` |
| ``bash_output`` | ``BashOutput`` | ``bash_id``, ``filter`` |
| ``kill_shell`` | ``KillShell`` | ``shell_id`` |
| ``mcp__<server>__<tool>`` | the same | the server's own |

Every view keeps memagent's own keys too (``path``, ``old_text``, …), so a hook written for
memagent keeps working.
"""

from __future__ import annotations

from pathlib import Path

from memagent.jsontypes import JsonObject, JsonValue
from memagent.tools.base import ClaudeName, absolute


def _bash(raw: JsonObject, root: Path) -> JsonObject:
    view: JsonObject = {**raw, "command": raw.get("command", "")}
    timeout = raw.get("timeout")
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        view["timeout"] = int(timeout * 1000)  # Claude Code counts milliseconds
    return view


def _file(raw: JsonObject, root: Path) -> JsonObject:
    view = dict(raw)
    if raw.get("path") is not None:
        view["file_path"] = absolute(raw["path"], root)
    return view


def _edit(raw: JsonObject, root: Path) -> JsonObject:
    view = _file(raw, root)
    view.update(old_string=raw.get("old_text", ""), new_string=raw.get("new_text", ""), replace_all=False)
    return view


def _search(raw: JsonObject, root: Path) -> JsonObject:
    view = dict(raw)
    if raw.get("path") is not None:
        view["path"] = absolute(raw["path"], root)
    return view


def _todo(raw: JsonObject, root: Path) -> JsonObject:
    given = raw.get("items")
    items = given if isinstance(given, list) else []
    todos: list[JsonValue] = [
        {
            "content": item.get("text", ""),
            "status": item.get("status", ""),
            "activeForm": item.get("text", ""),
            "id": item.get("id"),
        }
        for item in items
        if isinstance(item, dict)
    ]
    return {**raw, "todos": todos}


def _skill(raw: JsonObject, root: Path) -> JsonObject:
    return {**raw, "skill": raw.get("name", "")}


BASH = ClaudeName("Bash", _bash)
READ = ClaudeName("Read", _file)
WRITE = ClaudeName("Write", _file)
EDIT = ClaudeName("Edit", _edit)
GLOB = ClaudeName("Glob", _search)
GREP = ClaudeName("Grep", _search)
TODO_WRITE = ClaudeName("TodoWrite", _todo)
SKILL = ClaudeName("Skill", _skill)
LIST_MCP_RESOURCES = ClaudeName("ListMcpResourcesTool")
READ_MCP_RESOURCE = ClaudeName("ReadMcpResourceTool")
TASK = ClaudeName("Task")
BASH_OUTPUT = ClaudeName("BashOutput")
KILL_SHELL = ClaudeName("KillShell")


__all__ = [
    "BASH",
    "BASH_OUTPUT",
    "EDIT",
    "GLOB",
    "GREP",
    "KILL_SHELL",
    "LIST_MCP_RESOURCES",
    "READ",
    "READ_MCP_RESOURCE",
    "SKILL",
    "TASK",
    "TODO_WRITE",
    "WRITE",
]
