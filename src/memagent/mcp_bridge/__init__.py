"""memagent and the Model Context Protocol, both ways.

- :mod:`.config`: which MCP servers to use (``.mcp.json``, ``$MEMAGENT_HOME/mcp.json``).
- :mod:`.manager`: one background event loop owning every client session, with a
  synchronous facade for the agent loop.
- :mod:`.results`: MCP tool results as Messages-API content (text and image blocks).
- :mod:`.server`: serving a tool registry as an MCP stdio server (``memagent mcp serve``).

Nothing here is imported at start-up; the ``mcp`` SDK is imported only once a server is
started or served.
"""
