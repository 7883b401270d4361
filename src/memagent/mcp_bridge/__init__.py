"""memagent and the Model Context Protocol, both ways.

- :mod:`.config`: which MCP servers to use (``.mcp.json``, ``$MEMAGENT_HOME/mcp.json``).
- :mod:`.manager`: one background event loop owning every client session, with a
  synchronous facade for the agent loop.
- :mod:`.results`: MCP tool results as Messages-API content (text and image blocks).
- :mod:`.server`: ``memagent mcp serve``, the project's memory and task graph as an MCP server.

Nothing here is imported at start-up; the ``mcp`` SDK is imported only once a server is
started or served.
"""
