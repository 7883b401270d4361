"""The model boundary: a tiny protocol the loop talks to, and its implementations.

``anthropic.py`` is the only module in memagent that imports the ``anthropic`` SDK.
"""

from memagent.llm.protocol import ChatModel
from memagent.llm.types import (
    ModelError,
    ModelRequest,
    ModelResponse,
    PromptTooLongError,
    ResponseComplete,
    TextDelta,
    ToolUseStarted,
    Usage,
)

__all__ = [
    "ChatModel",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "PromptTooLongError",
    "ResponseComplete",
    "TextDelta",
    "ToolUseStarted",
    "Usage",
]
