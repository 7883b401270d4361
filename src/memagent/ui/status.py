"""The REPL's status line: model · permission mode · context used · cost so far.

Shown above the prompt. The cost comes from a :class:`~memagent.pricing.UsageMeter` fed with
every model response of the session. The context figure is what the next request will carry as
the context policy measures it (usage-anchored, after compaction and with oversized text set
aside), so it counts what is actually sent, also when the last request failed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memagent.pricing import UsageMeter, format_cost

if TYPE_CHECKING:
    from memagent.runtime import Session

AUTO_APPROVE = "auto-approve (--yes)"
ASK = "ask before tools"
MODE_TEXT = {"default": ASK, "acceptEdits": "accept edits", "plan": "plan mode (read-only)",
             "bypassPermissions": AUTO_APPROVE}


def short_tokens(count: int) -> str:
    """``950``, ``12.3k``, ``1.2M``."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k".replace(".0k", "k")
    return f"{count / 1_000_000:.1f}M"


def session_meter(session: "Session") -> UsageMeter:
    """The session's usage meter, fed with every model response.

    A session that keeps its own (``session.usage``) is used as is; otherwise a
    :class:`~memagent.features.usage.UsageFeature` is added to the agent's features."""
    own = getattr(session, "usage", None)
    if isinstance(own, UsageMeter):
        return own
    from memagent.features.usage import UsageFeature

    meter = UsageMeter()
    features = getattr(session.agent, "features", None)
    if isinstance(features, list):
        features.append(UsageFeature(meter, str(getattr(session.settings, "model", ""))))
    return meter


@dataclass
class StatusLine:
    """Builds the status text; ``attach`` once the session is open (before that: model and mode)."""

    model: str
    auto_approve: bool
    meter: UsageMeter | None = None
    threshold: int = 0
    _extra: dict[str, Any] = field(default_factory=dict)
    _session: Any = None

    def attach(self, session: "Session") -> None:
        self.meter = session_meter(session)
        self._session = session
        settings = session.settings
        self.model = str(getattr(settings, "model", self.model))
        try:
            self.threshold = int(getattr(settings, "compaction_threshold", 0) or 0)
        except (TypeError, ValueError):
            self.threshold = 0

    def mode(self) -> str:
        """The permission mode in words (the session's, once attached: ``/permissions`` changes it)."""
        permissions = getattr(getattr(self._session, "agent", None), "permissions", None)
        mode = getattr(permissions, "mode", None)
        if isinstance(mode, str) and mode in MODE_TEXT:
            return MODE_TEXT[mode]
        return AUTO_APPROVE if self.auto_approve else ASK

    def context_tokens(self) -> int:
        """What the next request carries; the last response's usage until a model call is made."""
        meter = self.meter
        used = meter.context_tokens if meter is not None else 0
        agent = getattr(self._session, "agent", None)
        measure = getattr(getattr(agent, "context", None), "current_tokens", None)
        if measure is None or meter is None or not meter.calls:
            return used
        try:
            return int(measure(agent.conversation))
        except Exception:  # a status line never breaks the prompt
            return used

    def text(self) -> str:
        parts = [self.model, self.mode()]
        meter = self.meter
        if meter is not None:
            context = f"context {short_tokens(self.context_tokens())}"
            if self.threshold:
                context += f"/{short_tokens(self.threshold)}"
            parts += [context, format_cost(meter.cost)]
        return " · ".join(parts)


__all__ = ["ASK", "AUTO_APPROVE", "StatusLine", "session_meter", "short_tokens"]
