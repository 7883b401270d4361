"""Is a near-duplicate a restatement or a correction?

Two cards can be very similar (cosine ≥ 0.85) and still say different things: "the timeout is
30 s" and "the timeout is 90 s", "deploying on Fridays is allowed" and "... is forbidden",
"we use Python 3.11" and "... 3.12", "the sync is on Mondays" and "... on Thursdays". Those are
updates: the new card supersedes the old one. A restatement or paraphrase ("we run the tests
with pytest" / "tests are run with pytest") stays a no-op.

:func:`correction_kind` compares what such statements differ in: numbers and versions, dates
(month and weekday names, ISO dates), negation, and a list of opposite words. It is deliberately
conservative about paraphrases: only these differences count.
"""

from __future__ import annotations

import re
from collections import Counter

_NUMBER = re.compile(r"(?<![\w.])v?\d+(?:[.:/-]\d+)*(?![\w])", re.IGNORECASE)
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_NEGATIONS = frozenset(
    "not no never none nothing nobody neither nor cannot can't don't doesn't didn't isn't aren't wasn't "
    "weren't won't wouldn't shouldn't mustn't haven't hasn't without".split()
)
_MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_WEEKDAYS = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays "
    "fridays saturdays sundays weekend weekends weekday weekdays".split()
)
_OPPOSITES = (
    ("allowed", "forbidden"), ("allowed", "prohibited"), ("allowed", "banned"), ("permitted", "forbidden"),
    ("enabled", "disabled"), ("enable", "disable"), ("on", "off"), ("true", "false"), ("yes", "no"),
    ("always", "never"), ("required", "optional"), ("mandatory", "optional"), ("include", "exclude"),
    ("included", "excluded"), ("before", "after"), ("increase", "decrease"), ("more", "less"),
    ("higher", "lower"), ("larger", "smaller"), ("faster", "slower"), ("public", "private"),
    ("sync", "async"), ("synchronous", "asynchronous"), ("accept", "reject"), ("accepted", "rejected"),
    ("like", "dislike"), ("likes", "dislikes"), ("prefer", "avoid"), ("prefers", "avoids"),
    ("use", "avoid"), ("uses", "avoids"), ("start", "stop"), ("open", "closed"), ("up", "down"),
    ("min", "max"), ("minimum", "maximum"), ("deprecated", "supported"), ("works", "fails"),
    ("pass", "fail"), ("passes", "fails"), ("safe", "unsafe"), ("stable", "unstable"),
    ("tabs", "spaces"), ("light", "dark"), ("left", "right"), ("first", "last"),
)
_OPPOSITE_OF: dict[str, set[str]] = {}
for _a, _b in _OPPOSITES:
    _OPPOSITE_OF.setdefault(_a, set()).add(_b)
    _OPPOSITE_OF.setdefault(_b, set()).add(_a)


def _numbers(text: str) -> Counter:
    return Counter(m.group(0).lower().lstrip("v") for m in _NUMBER.finditer(text))


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def _negations(words: list[str]) -> int:
    return sum(1 for w in words if w in _NEGATIONS or w.endswith("n't"))


def correction_kind(old: str, new: str) -> str | None:
    """What ``new`` changes in ``old`` ("value", "date", "negation", "opposite"), or ``None``
    when it only restates it."""
    if " ".join(old.lower().split()) == " ".join(new.lower().split()):
        return None
    if _numbers(old) != _numbers(new):
        return "value"
    old_words, new_words = _words(old), _words(new)
    old_set, new_set = set(old_words), set(new_words)
    if (old_set ^ new_set) & (_MONTHS | _WEEKDAYS):
        return "date"
    if (_negations(old_words) > 0) != (_negations(new_words) > 0):
        return "negation"
    only_old, only_new = old_set - new_set, new_set - old_set
    for word in only_new:
        if _OPPOSITE_OF.get(word, set()) & only_old:
            return "opposite"
    return None


__all__ = ["correction_kind"]
