"""A ChatModel wrapper that meters every response: the main loop's, summaries' and extraction's.

Wrapping the model (rather than watching the loop's events) counts every call the session
pays for, whichever room made it, each under the model that answered. ``context_tokens`` (how
full the conversation's window is) follows only the agent's own requests, the ones that carry
tools. Thread-safe: background memory extraction streams through the same wrapper.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from memagent.llm.protocol import ChatModel
from memagent.llm.types import ModelRequest, ResponseComplete, StreamEvent
from memagent.pricing import UsageMeter


class MeteredModel:
    """Delegates to ``inner``; adds each complete response's usage to ``meter``.

    ``also``: another metered model whose totals include these calls too, without them counting
    as its context (a subagent's calls, in its session's meter)."""

    def __init__(self, inner: ChatModel, meter: UsageMeter | None = None, *, also: MeteredModel | None = None):
        self.inner = inner
        self.meter = meter if meter is not None else UsageMeter()
        self.name = inner.name
        self.also = also
        self._lock = threading.Lock()

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        for event in self.inner.stream(request):
            if isinstance(event, ResponseComplete):
                model = event.response.model or request.model or self.name
                self.count(model, event.response.usage, context=bool(request.tools))
                if self.also is not None:
                    self.also.count(model, event.response.usage, context=False)
            yield event

    def count(self, model: str, usage: object, *, context: bool) -> None:
        """Add one response's usage; ``context``: it measures the conversation's context."""
        with self._lock:
            before = self.meter.context_tokens
            self.meter.add(model, usage)
            if not context:  # a summary, an extraction, a subagent: not this conversation's context
                self.meter.context_tokens = before

    def snapshot(self) -> UsageMeter:
        """A copy of the totals so far (safe to read while a background call runs)."""
        with self._lock:
            meter = self.meter
            return UsageMeter(
                calls=meter.calls,
                input_tokens=meter.input_tokens,
                output_tokens=meter.output_tokens,
                cache_read_tokens=meter.cache_read_tokens,
                cache_write_tokens=meter.cache_write_tokens,
                context_tokens=meter.context_tokens,
                cost=meter.cost,
                unpriced_models=set(meter.unpriced_models),
            )

    def __getattr__(self, name: str) -> object:
        """Anything else of the wrapped adapter (``base_url`` …), unknown here: the caller checks it."""
        return getattr(self.inner, name)


def meter_of(model: object) -> MeteredModel | None:
    """The metering wrapper of a session's model, when it has one."""
    return model if isinstance(model, MeteredModel) else None


__all__ = ["MeteredModel", "meter_of"]
