"""The REPL's status line: model · permission mode · context used · cost so far.

Shown above the prompt. The cost comes from a :class:`~memagent.pricing.UsageMeter` fed with
every model response of the session. The context figure is what the next request will carry as
the context policy measures it (usage-anchored, after compaction and with oversized text set
aside), so it counts what is actually sent, also when the last request failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memagent.pricing import UsageMeter, format_cost

if TYPE_CHECKING:
    from memagent.session import Session

AUTO_APPROVE = "auto-approve (--yes)"
ASK = "ask before tools"
MODE_TEXT = {
    "default": ASK,
    "acceptEdits": "accept edits",
    "plan": "plan mode (read-only)",
    "bypassPermissions": AUTO_APPROVE,
}


def short_tokens(count: int) -> str:
    """``950``, ``12.3k``, ``1.2M``."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k".replace(".0k", "k")
    return f"{count / 1_000_000:.1f}M"


def session_meter(session: Session) -> UsageMeter:
    """The session's usage meter, fed with every model response (an empty one for a session
    that counts nothing)."""
    return session.usage or UsageMeter()


@dataclass
class StatusLine:
    """Builds the status text; ``attach`` once the session is open (before that: model and mode
    as the command line gave them). Attached, it reads :meth:`~memagent.session.Session.status`."""

    model: str
    auto_approve: bool
    _session: Session | None = None

    def attach(self, session: Session) -> None:
        self._session = session

    def mode(self) -> str:
        """The permission mode in words (the session's, once attached: ``/permissions`` changes it)."""
        if self._session is not None:
            return MODE_TEXT.get(self._session.status().permission_mode, ASK)
        return AUTO_APPROVE if self.auto_approve else ASK

    def text(self) -> str:
        if self._session is None:
            return " · ".join([self.model, self.mode()])
        status = self._session.status()
        context = f"context {short_tokens(status.context_tokens)}"
        if status.compaction_threshold:
            context += f"/{short_tokens(status.compaction_threshold)}"
        return " · ".join([status.model, MODE_TEXT.get(status.permission_mode, ASK), context, format_cost(status.cost)])


__all__ = ["ASK", "AUTO_APPROVE", "StatusLine", "session_meter", "short_tokens"]
