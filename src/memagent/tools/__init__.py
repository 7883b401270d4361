"""Tools the model can call. Schemas come from pydantic input models next to their handlers."""

from memagent.tools.base import Tool, ToolContext, ToolError, ToolInput, ToolOutcome, ToolRegistry, tool

__all__ = ["Tool", "ToolContext", "ToolError", "ToolInput", "ToolOutcome", "ToolRegistry", "tool"]
