"""Fixtures for renderer and command tests: an Agent over a ScriptedModel, a captured console."""

from __future__ import annotations

import io
from typing import Any, Callable

import pytest
from pydantic import BaseModel
from rich.console import Console

from memagent.agent.loop import Agent
from memagent.llm.scripted import ScriptedModel
from memagent.llm.types import text_block
from memagent.permissions import Effect, declares
from memagent.tools.base import Tool, ToolContext, ToolRegistry, tool
from memagent.tools.builtin import builtin_tools


class NoInput(BaseModel):
    pass


@pytest.fixture
def interrupting_tool() -> Tool:
    """A tool that behaves as if the user pressed Ctrl-C while it ran."""

    @tool("interrupt_me", NoInput, effects=declares(Effect.READ))
    def interrupt_me(args: NoInput, ctx: ToolContext) -> str:
        """Raise KeyboardInterrupt (stands in for Ctrl-C during a long command)."""
        raise KeyboardInterrupt

    return interrupt_me


@pytest.fixture
def make_agent(tmp_path) -> Callable[..., Agent]:
    def build(script: list[Any], extra_tools: list[Tool] = (), **kwargs: Any) -> Agent:
        tools = ToolRegistry.of(builtin_tools() + list(extra_tools))
        return Agent(
            model=ScriptedModel(script),
            tools=tools,
            tool_context=ToolContext(root=tmp_path, outputs_dir=tmp_path / ".outputs"),
            system=[text_block("You are a test agent.")],
            **kwargs,
        )

    return build


@pytest.fixture
def console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=False, width=100, highlight=False, color_system=None), buffer
