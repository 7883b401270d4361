"""What a model call costs: one price table, and a meter that adds up a session's usage.

Prices are list prices in US dollars per million tokens, matched by the longest model-id
prefix (``claude-sonnet-4-5-20250929`` uses the ``claude-sonnet-4`` row). Cache writes cost
1.25× the input price and cache reads 0.1×, as the Messages API bills them. A model with no
row (a local model behind ``ANTHROPIC_BASE_URL``, a new id) has no known price: the meter
still counts its tokens and says the cost is unknown rather than guessing.

Terminal-free and dependency-free: the REPL's status line and ``/cost`` both read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

MILLION = 1_000_000
CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.10


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float

    @property
    def cache_write(self) -> float:
        return self.input * CACHE_WRITE_FACTOR

    @property
    def cache_read(self) -> float:
        return self.input * CACHE_READ_FACTOR


# The one price table (edit here when prices change). Keys are model-id prefixes.
PRICES: Mapping[str, Price] = MappingProxyType(
    {
        "claude-opus-4-5": Price(5.0, 25.0),
        "claude-opus-4-6": Price(5.0, 25.0),
        "claude-opus-4": Price(15.0, 75.0),
        "claude-opus-3": Price(15.0, 75.0),
        "claude-3-opus": Price(15.0, 75.0),
        "claude-sonnet": Price(3.0, 15.0),
        "claude-3-7-sonnet": Price(3.0, 15.0),
        "claude-3-5-sonnet": Price(3.0, 15.0),
        "claude-haiku-4": Price(1.0, 5.0),
        "claude-3-5-haiku": Price(0.8, 4.0),
        "claude-haiku-3-5": Price(0.8, 4.0),
        "claude-3-haiku": Price(0.25, 1.25),
    }
)


def price_for(model: str) -> Price | None:
    """The price row for ``model`` (longest matching prefix), or None when unknown."""
    matches = [prefix for prefix in PRICES if model.startswith(prefix)]
    return PRICES[max(matches, key=len)] if matches else None


def _tokens(usage: Any, name: str) -> int:
    value = usage.get(name, 0) if isinstance(usage, Mapping) else getattr(usage, name, 0)
    return int(value or 0)


def cost_usd(model: str, usage: Any) -> float | None:
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

    def add(self, model: str, usage: Any) -> None:
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


__all__ = ["PRICES", "Price", "UsageMeter", "cost_usd", "format_cost", "price_for"]
