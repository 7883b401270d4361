"""Fixtures for renderer and command tests: an Agent over a ScriptedModel, a captured console."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic import BaseModel
from rich.console import Console

from memagent.agent.loop import Agent
from memagent.config import Settings
from memagent.context.transcript import TranscriptWriter
from memagent.llm.scripted import ScriptedModel
from memagent.llm.types import text_block
from memagent.paths import project_paths
from memagent.permissions import Effect, declares
from memagent.session import Session
from memagent.todo import TodoManager
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
def session_of(tmp_path) -> Iterator[Callable[..., Session]]:
    """A real Session around a test agent (its own transcript, default settings), closed after."""
    made: list[Session] = []

    def build(agent: Agent, session_id: str = "20261122-120000-abcd", warnings: list[str] | None = None) -> Session:
        paths = project_paths(tmp_path)
        transcript = TranscriptWriter.open(paths.transcripts, session_id)
        session = Session(
            agent=agent,
            paths=paths,
            settings=Settings(),
            session_id=session_id,
            transcript=transcript,
            todo=TodoManager(),
            features=list(agent.features),
            warnings=list(warnings or []),
        )
        made.append(session)
        return session

    yield build
    for session in made:
        session.close()


@pytest.fixture
def console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=False, width=100, highlight=False, color_system=None), buffer
