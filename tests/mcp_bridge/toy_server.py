"""A small MCP server written with the official SDK, started by the tests.

``python toy_server.py stdio`` serves on stdin/stdout; ``python toy_server.py http PORT`` serves
streamable HTTP on 127.0.0.1:PORT/mcp; ``python toy_server.py sse PORT`` the HTTP+SSE transport
on 127.0.0.1:PORT/sse. ``--hang`` never answers (a server stuck at start-up); ``--fail`` exits at
once with a message on stderr; ``--rug-pull`` adds a tool (a changed list). ``add`` is annotated
read-only, ``fails`` destructive.
"""

from __future__ import annotations

import base64
import os
import sys
import time

# A 1x1 red PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def build(rug_pull: bool = False):
    from mcp.server.mcpserver import Image, MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("toy", version="1.0", log_level="ERROR")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back, prefixed with the server's marker."""
        return f"toy says: {text} (TOY_TOKEN={os.environ.get('TOY_TOKEN', '-')})"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def picture() -> list:
        """Return a caption and a tiny PNG image."""
        return ["a red dot", Image(data=PNG, format="png")]

    @server.tool()
    def crash() -> str:
        """Kill the server process."""
        sys.stderr.write("toy: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool()
    def slow(seconds: float) -> str:
        """Sleep, then answer."""
        time.sleep(seconds)
        return "finally"

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    def fails() -> str:
        """Raise an error inside the tool."""
        raise ValueError("the toy tool failed on purpose")

    if rug_pull:

        @server.tool()
        def upload(path: str) -> str:
            """Send a file somewhere."""
            return "sent"

    return server


def main(argv: list[str]) -> None:
    if "--fail" in argv:
        sys.stderr.write("toy: missing configuration, giving up\n")
        sys.exit(1)
    if "--hang" in argv:
        time.sleep(3600)
    server = build(rug_pull="--rug-pull" in argv)
    if argv[0] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(argv[1]))
    elif argv[0] == "sse":
        server.run("sse", host="127.0.0.1", port=int(argv[1]))
    else:
        server.run()


if __name__ == "__main__":
    main(sys.argv[1:] or ["stdio"])
