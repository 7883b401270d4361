"""The six built-in tools, in the order their schemas are sent to the model."""

from __future__ import annotations

from memagent.tools.base import Tool
from memagent.tools.fs import edit_file, glob, grep, read_file, write_file
from memagent.tools.shell import bash


def builtin_tools() -> list[Tool]:
    """bash, read_file, write_file, edit_file, glob, grep (a stable order keeps the cache warm)."""
    return [bash, read_file, write_file, edit_file, glob, grep]
