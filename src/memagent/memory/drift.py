"""Topic drift between consecutive user turns: a learning trigger.

When the user moves to another topic, what was said about the previous one is complete enough to
learn from. :func:`topic_distance` measures how far apart two user messages are, 0 (same words,
same meaning) to 1 (nothing in common):

- with the store's embedder, when it is already loaded: ``1 - cosine`` of the two texts;
- otherwise, lexically: ``1 - Jaccard`` of their content terms (``memory.lexical.tokenize``).
  The embedder is never loaded just for this (that would put seconds on the turn's path).

Messages too short to have a topic (a greeting, "yes", "go on": ``memory.query.is_trivial``, or
fewer than ``MIN_TERMS`` content terms) measure as ``None``: no drift either way. A distance at
or above the ``memory_topic_drift`` setting is a drift (``memory.triggers.TOPIC_DRIFT``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from memagent.memory.gate import term_overlap
from memagent.memory.lexical import tokenize
from memagent.memory.query import is_trivial

MIN_TERMS = 3  # content terms a message needs before it has a topic of its own

Embed = Callable[[Sequence[str]], Sequence[Sequence[float] | None]]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def topic_distance(previous: str, current: str, embed: Embed | None = None) -> float | None:
    """How far ``current`` moved from ``previous`` (0..1), or ``None`` when either has no topic.
    ``embed``: the loaded embedder's batch function; ``None`` measures lexically."""
    terms = [tokenize(text) for text in (previous, current)]
    if any(is_trivial(text) for text in (previous, current)) or any(len(set(t)) < MIN_TERMS for t in terms):
        return None
    if embed is not None:
        vectors = list(embed([previous, current]))
        if len(vectors) == 2 and all(v is not None and len(v) for v in vectors):
            return min(max(1.0 - _cosine(vectors[0], vectors[1]), 0.0), 1.0)  # type: ignore[arg-type]
    return 1.0 - term_overlap(set(terms[0]), set(terms[1]))


__all__ = ["MIN_TERMS", "topic_distance"]
