"""The REPL's status line: model · permission mode · context used · cost so far.

Shown under the prompt (prompt_toolkit's bottom toolbar). The numbers come from a
:class:`~memagent.pricing.UsageMeter` fed with every model response of the session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memagent.pricing import UsageMeter, format_cost

if TYPE_CHECKING:
    from memagent.runtime import Session

AUTO_APPROVE = "auto-approve (--yes)"
ASK = "ask before tools"


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

    def attach(self, session: "Session") -> None:
        self.meter = session_meter(session)
        settings = session.settings
        self.model = str(getattr(settings, "model", self.model))
        try:
            self.threshold = int(getattr(settings, "compaction_threshold", 0) or 0)
        except (TypeError, ValueError):
            self.threshold = 0

    def text(self) -> str:
        parts = [self.model, AUTO_APPROVE if self.auto_approve else ASK]
        meter = self.meter
        if meter is not None:
            context = f"context {short_tokens(meter.context_tokens)}"
            if self.threshold:
                context += f"/{short_tokens(self.threshold)}"
            parts += [context, format_cost(meter.cost)]
        return " · ".join(parts)


__all__ = ["ASK", "AUTO_APPROVE", "StatusLine", "session_meter", "short_tokens"]
