"""Whether a session that is ending is worth a memory-extraction call.

Every ``memagent -p "hi"`` used to end with a call to the small model, which finds nothing in a
greeting or a one-off question. The rule, cheap and local:

- two or more turns the user typed → yes (a conversation has decisions and corrections);
- any tool call → yes (work was done: files, commands, findings);
- one typed turn → only when it says something durable: a cue such as "remember", "always",
  "never", "prefer", "from now on", "we use", "my name", "what finally worked", or a brief
  long enough to carry facts
  (``LONG_BRIEF`` characters or more);
- nothing typed → no.

Messages already mined (``processed``) are left out first, so a resumed session is judged by
what is new.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from memagent.jsontypes import JsonMapping
from memagent.llm.items import own_texts, tool_uses

LONG_BRIEF = 300
DURABLE_CUES = re.compile(
    r"\b(remember|always|never|prefer|preferably|from now on|going forward|in future|don'?t|do not|"
    r"we use|we don'?t|our|convention|policy|make sure|keep in mind|note that|instead of|"
    r"my name|call me|i am|i'm|i work|i like|i hate|i want|finally worked|what worked|that worked|the fix was)\b",
    re.IGNORECASE,
)


def _typed_texts(message: JsonMapping) -> list[str]:
    if message.get("role") != "user":
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [content] if content.strip() else []
    return [t for t in own_texts(message) if t.strip()][:1]


def _has_tool_call(message: JsonMapping) -> bool:
    content = message.get("content")
    return message.get("role") == "assistant" and isinstance(content, list) and bool(tool_uses(content))


def worth_learning_at_end(
    messages: Sequence[JsonMapping], ids: Sequence[str] = (), processed: Collection[str] = ()
) -> bool:
    """True when the not-yet-mined part of the session may hold something worth remembering."""
    fresh = [m for m, i in zip(messages, ids or [""] * len(messages)) if not ids or str(i) not in processed]
    if not any(m.get("role") == "assistant" for m in fresh):
        return False
    typed = [text for m in fresh for text in _typed_texts(m)]
    if len(typed) >= 2 or any(_has_tool_call(m) for m in fresh):
        return True
    if not typed:
        return False
    brief = typed[0]
    return len(brief) >= LONG_BRIEF or DURABLE_CUES.search(brief) is not None


__all__ = ["DURABLE_CUES", "LONG_BRIEF", "worth_learning_at_end"]
