"""The settings each capability owns, as pydantic sub-models: :class:`memagent.config.Settings`
composes them (its keys are theirs, flat, as in every config file), and each feature takes its
own sub-model, nothing wider (``BaseFeature.settings_model`` names it).

They live here, apart from the feature modules, because ``config`` is read before anything heavy
is imported (``memagent --help``, ``memagent tasks``) and sits below the features: it may not
import them. A leaf: it imports nothing of memagent.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

_SUB_MODEL = ConfigDict(extra="forbid", frozen=True, validate_default=True, use_attribute_docstrings=True)


class TodoSettings(BaseModel):
    """The todo list (``features/todos.py``)."""

    model_config = _SUB_MODEL

    todo_reminder: bool = True
    """Remind the model of its open todo items after a few rounds of tool calls without an update
    (false: never)."""


class BackgroundShellSettings(BaseModel):
    """Background shells (``features/background_shells.py``)."""

    model_config = _SUB_MODEL

    background_shell_limit: int = Field(16, ge=1, le=64)
    """How many background commands may run at once in a session (its subagents included); one more
    is refused until one ends or is stopped with kill_shell."""


class SubagentSettings(BaseModel):
    """Subagents (``features/subagents.py``)."""

    model_config = _SUB_MODEL

    subagent_max_depth: int = Field(2, ge=1, le=5)
    """How deep subagents may nest: 1 lets the session's agent start subagents only; 2 (the
    default) lets a subagent whose definition lists ``task`` start its own, and so on."""


class CheckpointSettings(BaseModel):
    """Checkpoints of the working tree (``features/checkpoints.py``)."""

    model_config = _SUB_MODEL

    checkpoints: bool = True
    """Record the working tree at the start of every user turn (a shadow git repository under
    ``$MEMAGENT_HOME/checkpoints``), so ``/rewind`` and ``memagent rewind`` can restore it."""
    checkpoint_max_file_bytes: int = Field(10 * 1024 * 1024, ge=0)
    """Files larger than this are left out of checkpoints (a rewind leaves them as they are)."""
    checkpoint_max_files: int = Field(100_000, ge=1)
    """A turn that changed more files than this (a dependency folder nobody ignored) gets no
    checkpoint, with a warning saying so."""


FEATURE_SETTINGS: tuple[type[BaseModel], ...] = (
    TodoSettings,
    BackgroundShellSettings,
    SubagentSettings,
    CheckpointSettings,
)
"""Every capability's sub-model, in the order :class:`memagent.config.Settings` composes them."""

__all__ = [
    "FEATURE_SETTINGS",
    "BackgroundShellSettings",
    "CheckpointSettings",
    "SubagentSettings",
    "TodoSettings",
]
