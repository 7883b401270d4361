"""What a model call costs, and a meter that adds up a session's usage.

Prices come from the model registry (:mod:`memagent.models`: list prices per million tokens,
matched by the longest model-id prefix, cache writes at 1.25× and reads at 0.1× the input
price). A model with no known price (a local model behind ``ANTHROPIC_BASE_URL``, a new id)
still has its tokens counted; its cost is unknown rather than guessed.

Terminal-free: the REPL's status line, ``/cost`` and the headless result all read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from memagent.models import Price, info

MILLION = 1_000_000


def price_for(model: str) -> Price | None:
    """The list price of ``model`` (an id or an alias), or None when unknown."""
    return info(model).price


def _tokens(usage: object, name: str) -> int:
    """A token count of ``usage`` (a ``Usage`` or its dict form, as stored); 0 when absent."""
    value = usage.get(name, 0) if isinstance(usage, Mapping) else getattr(usage, name, 0)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def cost_usd(model: str, usage: object) -> float | None:
    """The cost of one response's ``usage`` (a ``Usage`` or its dict form); None if unpriced."""
    price = price_for(model)
    if price is None:
        return None
    total = (
        _tokens(usage, "input_tokens") * price.input
        + _tokens(usage, "output_tokens") * price.output
        + _tokens(usage, "cache_creation_input_tokens") * price.cache_write
        + _tokens(usage, "cache_read_input_tokens") * price.cache_read
    )
    return total / MILLION


def format_cost(usd: float | None) -> str:
    """``$0.042``, ``$1.37``; ``cost n/a`` when the price is unknown."""
    if usd is None:
        return "cost n/a"
    if usd < 0.995:
        return f"${usd:.3f}"
    return f"${usd:,.2f}"


@dataclass
class UsageMeter:
    """Adds up the tokens and cost of every model response in a session.

    ``cost`` is None as soon as one response came from a model with no known price (a partial
    sum would be misleading); ``context_tokens`` is what the newest request put in front of the
    model, i.e. how full the context window is.
    """

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    context_tokens: int = 0
    cost: float | None = 0.0
    unpriced_models: set[str] = field(default_factory=set)

    def add(self, model: str, usage: object) -> None:
        self.calls += 1
        self.input_tokens += _tokens(usage, "input_tokens")
        self.output_tokens += _tokens(usage, "output_tokens")
        self.cache_read_tokens += _tokens(usage, "cache_read_input_tokens")
        self.cache_write_tokens += _tokens(usage, "cache_creation_input_tokens")
        self.context_tokens = (
            _tokens(usage, "input_tokens")
            + _tokens(usage, "cache_read_input_tokens")
            + _tokens(usage, "cache_creation_input_tokens")
        )
        one = cost_usd(model, usage)
        if one is None:
            self.unpriced_models.add(model)
            self.cost = None
        elif self.cost is not None:
            self.cost += one


__all__ = ["Price", "UsageMeter", "cost_usd", "format_cost", "price_for"]
