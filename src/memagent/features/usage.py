"""Usage: adds up the tokens and cost of every model response into a :class:`UsageMeter`.

The REPL's status line and ``/cost`` read the meter. Brings no tools and no prompt text, so it
can be composed last without changing the cached prompt prefix.
"""

from __future__ import annotations

from memagent.agent.feature import BaseFeature
from memagent.llm.types import ModelResponse
from memagent.pricing import UsageMeter


class UsageFeature(BaseFeature):
    name = "usage"

    def __init__(self, meter: UsageMeter, default_model: str) -> None:
        self.meter = meter
        self.default_model = default_model  # when a response does not name its model

    def after_response(self, response: ModelResponse) -> None:
        self.meter.add(response.model or self.default_model, response.usage)


__all__ = ["UsageFeature"]
