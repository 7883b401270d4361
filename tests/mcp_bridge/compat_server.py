"""A hand-written MCP stdio server speaking the 2025-11-25 protocol (the ``initialize`` handshake,
as most servers in the wild do), with the shapes a client must cope with: schemas with a
top-level combination, a task-only tool, resources (text, image, binary), resource links in
results, prompts with arguments, and noise.

``python compat_server.py [--junk]``: ``--junk`` prints lines that are not JSON-RPC to stdout
(at start and in the middle of a call) and chatter to stderr.
"""

from __future__ import annotations

import base64
import json
import sys

VERSION = "2025-11-25"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
ARCHIVE = bytes(range(256)) * 40  # 10 KiB of binary data
NO_ARGS = {"type": "object", "properties": {}}
TOOLS = [
    {
        "name": "lookup",
        "description": "Find a record by id or by name.",
        "inputSchema": {
            "type": "object",
            "anyOf": [
                {"type": "object", "title": "by id", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
                {
                    "type": "object",
                    "title": "by name",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            ],
        },
    },
    {
        "name": "tagged",
        "description": "Tag a record.",
        "inputSchema": {
            "type": "object",
            "allOf": [{"properties": {"record": {"type": "string"}}, "required": ["record"]}, {"$ref": "#/$defs/tag"}],
            "$defs": {"tag": {"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"]}},
        },
    },
    {
        "name": "scalar_or_object",
        "description": "A string or an object: no single object schema can say that.",
        "inputSchema": {
            "type": "object",
            "oneOf": [{"type": "string"}, {"type": "object", "properties": {"x": {"type": "integer"}}}],
        },
    },
    {
        "name": "background_job",
        "description": "Runs only as an MCP task.",
        "inputSchema": NO_ARGS,
        "execution": {"taskSupport": "required"},
    },
    {"name": "link_readme", "description": "Answer with a link to the readme resource.", "inputSchema": NO_ARGS},
]
RESOURCES = [
    {"uri": "notes://readme", "name": "readme", "mimeType": "text/markdown", "description": "The project readme"},
    {"uri": "notes://logo", "name": "logo", "mimeType": "image/png"},
    {"uri": "notes://archive", "name": "archive", "mimeType": "application/zip"},
]
CONTENTS = {
    "notes://readme": {"mimeType": "text/markdown", "text": "# Readme\nHello from a resource."},
    "notes://logo": {"mimeType": "image/png", "blob": base64.b64encode(PNG).decode()},
    "notes://archive": {"mimeType": "application/zip", "blob": base64.b64encode(ARCHIVE).decode()},
}
PROMPTS = [
    {
        "name": "review",
        "description": "Review one file",
        "arguments": [
            {"name": "file", "description": "the file to review", "required": True},
            {"name": "focus", "required": False},
        ],
    }
]


class Failure(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def call_tool(params: dict) -> dict:
    name, arguments = params.get("name"), params.get("arguments") or {}
    if name == "link_readme":
        link = {"type": "resource_link", **RESOURCES[0]}
        return {"content": [{"type": "text", "text": "See the readme."}, link]}
    if name not in {t["name"] for t in TOOLS}:
        raise Failure(-32602, f"unknown tool {name}")
    return {"content": [{"type": "text", "text": f"{name} got {sorted(arguments.items())}"}]}


def read_resource(params: dict) -> dict:
    uri = params.get("uri")
    if uri not in CONTENTS:
        raise Failure(-32002, f"no resource {uri}")
    return {"contents": [{"uri": uri, **CONTENTS[uri]}]}


def get_prompt(params: dict) -> dict:
    arguments = params.get("arguments") or {}
    text = f"Please review {arguments.get('file')} with a focus on {arguments.get('focus') or 'everything'}."
    return {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}


def answer(method: str, params: dict, junk: bool) -> dict:
    if method == "initialize":
        capabilities = {"tools": {}, "resources": {}, "prompts": {}}
        return {
            "protocolVersion": VERSION,
            "capabilities": capabilities,
            "serverInfo": {"name": "compat", "version": "0.1"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        if junk:
            print("calling a tool (not JSON either)", flush=True)
        return call_tool(params)
    if method == "resources/list":
        return {"resources": RESOURCES}
    if method == "resources/read":
        return read_resource(params)
    if method == "prompts/list":
        return {"prompts": PROMPTS}
    if method == "prompts/get":
        return get_prompt(params)
    if method == "ping":
        return {}
    raise Failure(-32601, f"method not found: {method}")


def main(argv: list[str]) -> None:
    junk = "--junk" in argv
    if junk:
        print("compat server 0.1 starting (this line is not JSON)", flush=True)
        sys.stderr.write("DEBUG: a lot of chatter on stderr\n" * 20)
        sys.stderr.flush()
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "id" not in message or "method" not in message:
            continue  # notifications and responses
        try:
            reply = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "result": answer(message["method"], message.get("params") or {}, junk),
            }
        except Failure as exc:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": exc.code, "message": str(exc)}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
