"""The one registry of model facts: aliases, context windows, output limits, prices, capabilities.

Every other part asks here: the settings resolve ``--model`` / ``MEMAGENT_MODEL`` through
:func:`resolve`, compaction sizes its threshold from :func:`info`'s context window, the usage
meter prices calls with :attr:`ModelInfo.price`, ``/model`` shows the facts.

* **Aliases**, as Claude Code accepts them: ``sonnet``, ``opus`` and ``haiku`` name the newest
  model of that family (the newest in the installed SDK's model list when this table was last
  edited; a test keeps it so), ``default`` the default model. Case does not matter.
* **Facts** are matched by the longest model-id prefix (``claude-sonnet-4-5-20250929`` uses the
  ``claude-sonnet-4`` row). An id with no row (a local model behind ``ANTHROPIC_BASE_URL``, a new
  id) is passed through unchanged, with the default window and output limit and *no* price: the
  cost of its calls is unknown, never guessed.
* **Prices** are list prices in US dollars per million tokens. Cache writes cost 1.25× the input
  price and cache reads 0.1×, as the Messages API bills them.

A leaf: it imports nothing of memagent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.10

DEFAULT_MODEL = "claude-sonnet-5-5"
"""The conversation's model (a current Sonnet; checked against the installed SDK in tests)."""
DEFAULT_SMALL_MODEL = "claude-haiku-4-5"
"""The cheaper model for compaction summaries and memory extraction."""

DEFAULT_CONTEXT_WINDOW = 200_000
DEFAULT_MAX_OUTPUT = 8_192
MEMAGENT_MAX_TOKENS = 8_192  # output tokens asked per response, unless the model allows fewer

ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "sonnet": "claude-sonnet-5-5",
        "opus": "claude-opus-5-5",
        "haiku": "claude-haiku-5-5",
        "default": DEFAULT_MODEL,
    }
)

MODERN = frozenset({"tools", "images", "prompt_caching", "extended_thinking", "memory_tool"})
"""``memory_tool``: trained on the Messages API's client-side memory tool (``memory_20250818``)."""
CLAUDE_3_7 = MODERN - {"memory_tool"}
CLAUDE_3 = frozenset({"tools", "images", "prompt_caching"})


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


@dataclass(frozen=True)
class Family:
    """What a row of the table says about every model id starting with its prefix."""

    context_window: int = DEFAULT_CONTEXT_WINDOW
    max_output_tokens: int = DEFAULT_MAX_OUTPUT
    price: Price | None = None
    capabilities: frozenset[str] = MODERN


# The one table of model facts (edit here when a model or a price changes). Keys are id prefixes.
FAMILIES: Mapping[str, Family] = MappingProxyType(
    {
        "claude-": Family(),
        "claude-opus-4-5": Family(max_output_tokens=64_000, price=Price(5.0, 25.0)),
        "claude-opus-4-6": Family(max_output_tokens=64_000, price=Price(5.0, 25.0)),
        "claude-opus-4": Family(max_output_tokens=32_000, price=Price(15.0, 75.0)),
        "claude-opus-3": Family(max_output_tokens=4_096, price=Price(15.0, 75.0), capabilities=CLAUDE_3),
        "claude-3-opus": Family(max_output_tokens=4_096, price=Price(15.0, 75.0), capabilities=CLAUDE_3),
        "claude-sonnet": Family(max_output_tokens=64_000, price=Price(3.0, 15.0)),
        "claude-3-7-sonnet": Family(max_output_tokens=64_000, price=Price(3.0, 15.0), capabilities=CLAUDE_3_7),
        "claude-3-5-sonnet": Family(price=Price(3.0, 15.0), capabilities=CLAUDE_3),
        "claude-haiku-4": Family(max_output_tokens=64_000, price=Price(1.0, 5.0)),
        "claude-3-5-haiku": Family(price=Price(0.8, 4.0), capabilities=CLAUDE_3),
        "claude-haiku-3-5": Family(price=Price(0.8, 4.0), capabilities=CLAUDE_3),
        "claude-3-haiku": Family(max_output_tokens=4_096, price=Price(0.25, 1.25), capabilities=CLAUDE_3),
    }
)
UNKNOWN = Family(capabilities=frozenset())


@dataclass(frozen=True)
class ModelInfo:
    """The facts memagent uses about one model id."""

    id: str
    known: bool  # a row of the table matched
    context_window: int
    max_output_tokens: int
    price: Price | None
    capabilities: frozenset[str]

    @property
    def default_max_tokens(self) -> int:
        """Output tokens memagent asks for per response unless ``max_tokens`` is set."""
        return min(MEMAGENT_MAX_TOKENS, self.max_output_tokens)


def resolve(name: str) -> str:
    """The model id for ``name``: an alias (``sonnet``, ``opus``, ``haiku``, ``default``) becomes
    the current id of its family; any other name is returned unchanged (stripped)."""
    cleaned = name.strip()
    return ALIASES.get(cleaned.lower(), cleaned)


def _family(model_id: str) -> Family | None:
    matches = [prefix for prefix in FAMILIES if model_id.startswith(prefix)]
    return FAMILIES[max(matches, key=len)] if matches else None


def info(name: str) -> ModelInfo:
    """The facts of ``name`` (an id or an alias); an unknown id gets the defaults and no price."""
    model_id = resolve(name)
    family = _family(model_id)
    found = family or UNKNOWN
    return ModelInfo(
        id=model_id,
        known=family is not None,
        context_window=found.context_window,
        max_output_tokens=found.max_output_tokens,
        price=found.price,
        capabilities=found.capabilities,
    )


def describe(name: str) -> str:
    """One line for ``/model``: ``claude-sonnet-5-5: 200k context, $3/$15 per million tokens``."""
    facts = info(name)
    window = f"{facts.context_window // 1000}k context"
    if facts.price is None:
        price = "price unknown"
    else:
        price = f"${facts.price.input:g}/${facts.price.output:g} per million tokens in/out"
    known = "" if facts.known else " (not in memagent's model table: sent as is)"
    return f"{facts.id}: {window}, {price}{known}"


__all__ = [
    "ALIASES",
    "MEMAGENT_MAX_TOKENS",
    "DEFAULT_MODEL",
    "DEFAULT_SMALL_MODEL",
    "FAMILIES",
    "ModelInfo",
    "Price",
    "describe",
    "info",
    "resolve",
]
