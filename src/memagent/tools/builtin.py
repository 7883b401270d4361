"""The six built-in tools, in the order their schemas are sent to the model."""

from __future__ import annotations

from memagent.tools.base import RegisteredTool
from memagent.tools.fs import edit_file, read_file, write_file
from memagent.tools.search import glob, grep
from memagent.tools.shell import ShellConfig, bash_tool


def builtin_tools(shell: ShellConfig | None = None) -> list[RegisteredTool]:
    """bash, read_file, write_file, edit_file, glob, grep (a stable order keeps the cache warm).

    ``shell`` says how bash runs commands (the sandbox, the saved-output cap); by default
    sandboxed when bubblewrap can start."""
    return [bash_tool(shell), read_file, write_file, edit_file, glob, grep]
