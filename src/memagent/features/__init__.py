"""Capabilities as plug-ins: each module here is one :class:`~memagent.agent.feature.Feature`.

A feature receives its collaborators explicitly at construction (a store, a manager, a
callable) and brings its own tools, prompt text, per-turn context and lifecycle reactions. The
runtime composes them in a fixed order; nothing else knows what a feature does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memagent.agent.feature import BaseFeature


def with_slash_commands() -> tuple[type[BaseFeature], ...]:
    """The features whose slash commands the REPL offers (``BaseFeature.slash_commands``), in the
    order ``/help`` lists them: read from their classes, so they are known before a session is
    open. Imported here, on first use, so that nothing imports them just to start."""
    from memagent.features.background_shells import BackgroundShellsFeature
    from memagent.features.mcp_client import McpClientFeature
    from memagent.features.subagents import SubagentsFeature
    from memagent.features.tasks import TaskGraphFeature
    from memagent.features.todos import TodoFeature

    return (TodoFeature, TaskGraphFeature, McpClientFeature, BackgroundShellsFeature, SubagentsFeature)
