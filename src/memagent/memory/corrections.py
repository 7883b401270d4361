"""Does a newer statement correct an older one, restate it, or say something else?

A correction keeps the subject and the slot and changes the value: "Alice owns billing" →
"Bob owns billing now", "the timeout is 30 s" → "… 90 s", "deploys on Tuesdays" → "… Thursdays",
"Redis caches PDFs for 10 minutes" → "the PDF cache TTL was cut from 10 to 2 minutes". Two
statements of the same shape about different subjects are two facts: "consumer A reads shard 1" /
"consumer B reads shard 2" differ in two places (which consumer, which shard), so neither replaces
the other. Shared words decide nothing; what differs, and where, does.

:func:`parse` reads a statement into

- **keys**: its content words (stemmed), the subject and the relation;
- **values**, by slot: numbers with their unit (durations, sizes, counts of a noun), clock times,
  weekdays, dates written as digits, capitalised names, identifiers (``v2``, ``harbor.yaml``);
- **qualifiers**: when it happened ("On 12 March 2026 …", "in August", "since May"), which are
  not values: the same fact told with its date is the same fact, and two statements that open
  with two different dates are two events;
- **references** to what no longer holds: "from 10 to 2", "instead of 15", "no longer …",
  "…, not 07:00", "moved off X", "dropped X";
- **markers**: negation, change words ("now", "raised", "moved"), additions ("also", "too").

:func:`judge` compares two parsed statements: a reference to the older statement's value, or
exactly one changed slot (a value, a negation, an opposite word) under the same keys, is a
correction; two changed slots (another subject *and* another value), an addition, or a second
dated event is a different fact; no change at all is a restatement. ``topic`` — the cosine of the
two statements with their values masked (:func:`masked`), given by the caller's embedder — guards
the decision: a correction must be about the same thing.

The table of pairs in ``bench/data/correction_pairs.json`` (half corrections, half not; a dev and
a test split) measures it: ``tests/memory/test_corrections.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from memagent.memory.statements import OPPOSITE_OF, Statement, masked, parse, stem

# Thresholds: how alike two statements' topics must be (masked cosine, or key overlap without an
# embedder) for a changed value to count as a correction, and for a reference to the older value.
TOPIC_UPDATE = 0.55
TOPIC_REFERENCE = 0.45
TOPIC_REPHRASED = 0.70  # a change word plus one changed value, when the keys are worded differently


# --------------------------------------------------------------------------- judging


def _same_word(a: str, b: str) -> bool:
    """Stems that are one word in two forms ("store"/"storage", "limit"/"limited")."""
    if a == b:
        return True
    common = 0
    for x, y in zip(a, b):
        if x != y:
            break
        common += 1
    return common >= 4 and common >= 0.6 * min(len(a), len(b))


def _unmatched(mine: Iterable[str], theirs: Iterable[str]) -> set[str]:
    others = list(theirs)
    return {word for word in mine if not any(_same_word(word, other) for other in others)}


def _joined_compounds(words: set[str], other: set[str]) -> set[str]:
    """``words`` with a pair written apart here and together there ("time out" / "timeout") removed."""
    gone = set()
    for a in words:
        for b in words:
            if a != b and (a + b in other or stem(a + b) in other):
                gone |= {a, b}
    return words - gone


def key_difference(old: Statement, new: Statement) -> tuple[set[str], set[str]]:
    """Content words only the older and only the newer statement use (forms of one word match)."""
    only_old = _joined_compounds(_unmatched(old.keys, new.keys), set(new.keys))
    only_new = _joined_compounds(_unmatched(new.keys, old.keys), set(old.keys))
    return only_old, only_new


def _opposed(only_old: set[str], only_new: set[str]) -> bool:
    return any(OPPOSITE_OF.get(word, frozenset()) & only_old for word in only_new)


def changed_slots(old: Statement, new: Statement) -> list[str]:
    """The value slots both statements fill, with different values."""
    changed = []
    for slot in sorted(old.values.keys() & new.values.keys()):
        if old.values[slot] != new.values[slot] and not (
            slot == "name" and (old.values[slot] <= new.values[slot] or new.values[slot] <= old.values[slot])
        ):
            changed.append(slot)
    return changed


def key_overlap(old: Statement, new: Statement) -> float:
    """Share of the smaller key set found in the other: a topic measure without an embedder."""
    return _overlap(old.keys, new.keys)


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    small, large = sorted((a, b), key=len)
    return sum(1 for word in small if any(_same_word(word, other) for other in large)) / len(small)


def _replaces(old: Statement, new: Statement) -> bool:
    """``new`` states a value (or opens with a name) that ``old`` does not have."""
    known = old.all_values() | old.keys
    return bool((new.all_values() | new.initials) - known)


def _refers_to_old(old: Statement, new: Statement) -> str | None:
    """Whether ``new`` names what ``old`` said as no longer so: one of its values ("value"), or
    one of its words after "no longer", "instead of", "from … to" ("words")."""
    named = new.references & (old.all_values() | old.initials)
    if named and ((new.ended and not old.ended) or _replaces(old, new)):
        return "value"
    if any(_same_word(word, ref) for word in old.keys for ref in new.word_references):
        return "words"
    return None


# --------------------------------------------------------------------------- the verdict


@dataclass(frozen=True)
class Verdict:
    relation: str  # "updates", "restates" or "distinct"
    reason: str
    kind: str | None = None  # for an update: "value", "date", "negation", "opposite" or "reference"

    @property
    def updates(self) -> bool:
        return self.relation == "updates"


Topic = Callable[[], float]  # computed only when a verdict depends on it (it costs an embedding)


def judge(old: str | Statement, new: str | Statement, topic: float | Topic | None = None) -> Verdict:
    """How ``new`` relates to ``old`` (see the module docstring). ``topic``: cosine of the two
    :func:`masked` texts, or a function computing it; without it, the overlap of their content
    words stands in."""
    old = parse(old) if isinstance(old, str) else old
    new = parse(new) if isinstance(new, str) else new
    if topic is None:
        topic = key_overlap(old, new)
    return _judge(old, new, _Lazy(topic))


class _Lazy:
    """A topic similarity computed at most once, on first comparison."""

    def __init__(self, source: float | Topic) -> None:
        self._source = source
        self._value: float | None = None

    def __ge__(self, threshold: float) -> bool:
        if self._value is None:
            self._value = float(self._source() if callable(self._source) else self._source)
        return self._value >= threshold


def _judge(old: Statement, new: Statement, topic: _Lazy) -> Verdict:
    if old.event and new.event and old.event != new.event:
        return Verdict("distinct", "another event")
    reference = _refers_to_old(old, new)
    if reference and topic >= (TOPIC_REFERENCE if reference == "value" else TOPIC_UPDATE) and not new.additive:
        return Verdict("updates", "names what the older statement said as changed", "reference")
    if new.additive:
        return Verdict("distinct", "adds to it")
    only_old, only_new = key_difference(old, new)
    slots = changed_slots(old, new)
    if only_old and only_new and only_old <= old.initials and only_new <= new.initials:
        slots.append("name")  # "Alice owns billing" / "Bob owns billing now": names that open the sentence
        only_old, only_new = set(), set()
    opposite = _opposed(only_old, only_new)
    negation = old.negated != new.negated
    words_differ = bool(only_old and only_new) and not opposite
    changes = len(slots) + int(opposite) + int(negation) + int(words_differ)
    if changes == 0:
        return Verdict("restates", "same subject and values")
    kind = _update_kind(slots, opposite, negation)
    if not _same_topic(old, new, only_old, only_new, negation, renamed="name" in slots):
        return Verdict("distinct", "too little in common to be the same fact")
    if changes == 1 and kind is not None and topic >= TOPIC_UPDATE and (len(only_new) <= 2 or new.changes):
        return Verdict("updates", f"one changed slot ({kind})", kind)
    if (
        changes == 2
        and words_differ
        and len(only_old) <= 1
        and kind is not None
        and new.changes
        and topic >= TOPIC_REPHRASED
    ):
        return Verdict("updates", f"a change, reworded ({kind})", kind)
    if _retuned(slots, only_old, words_differ, new) and topic >= TOPIC_REPHRASED and not (opposite or negation):
        return Verdict("updates", "several amounts changed at once", "value")
    if changes >= 2:
        return Verdict("distinct", "differs in more than one place (another subject)")
    return Verdict("distinct", "another subject or relation")


def _same_topic(
    old: Statement, new: Statement, only_old: set[str], only_new: set[str], negation: bool, renamed: bool
) -> bool:
    """A changed slot can only be a correction between statements that share most of their
    content words — two of them at least when what changed is a name ("Alice owns billing" /
    "Bob owns billing now", not "Bye Nate" / "Thanks Joanna, bye"); a flipped negation only when
    little else changed."""
    old_keys = old.keys - (old.initials - new.keys)  # an opening name the other does not use
    new_keys = new.keys - (new.initials - old.keys)
    if not new_keys or _overlap(old_keys, new_keys) < 0.5:
        return False
    shared = sum(1 for word in old_keys if any(_same_word(word, other) for other in new_keys))
    if renamed and shared < 2:
        return False
    return not negation or (len(only_old) <= 2 and len(only_new) <= 2)


def _retuned(slots: Sequence[str], only_old: set[str], words_differ: bool, new: Statement) -> bool:
    """Several amounts of one thing changed together, said as a change ("was changed to 512 MB or
    15 minutes"): every changed slot is a number, none names another subject."""
    amounts = all(slot == "number" or slot == "clock" or slot.startswith("count:") for slot in slots)
    return len(slots) >= 2 and amounts and new.changes and (not words_differ or len(only_old) <= 1)


def _update_kind(slots: Sequence[str], opposite: bool, negation: bool) -> str | None:
    if negation:
        return "negation"
    if opposite:
        return "opposite"
    if not slots:
        return None
    return "date" if slots[0] == "weekday" else "value"


def correction_kind(old: str, new: str) -> str | None:
    """What ``new`` changes in ``old`` ("value", "date", "negation", "opposite", "reference"), or
    ``None`` when it does not correct it (a restatement or another fact)."""
    verdict = judge(old, new)
    return verdict.kind if verdict.updates else None


# --------------------------------------------------------------------------- against a store


@dataclass(frozen=True)
class Neighbour:
    """A stored (or earlier imported) active card close to a new one."""

    id: str
    content: str
    similarity: float  # cosine of the two texts (term overlap without vectors)
    created_at: datetime


@dataclass(frozen=True)
class Decision:
    """What to do with a new card: ``add`` it, it is a ``duplicate`` of ``other`` (a
    restatement), it ``supersedes`` ``other``, or it is older than ``other``, which corrects it
    (``superseded``: an import of older cards)."""

    action: str
    other: Neighbour | None = None
    reason: str = ""


class Comparer:
    """Parsed statements and masked-text vectors, each computed once per text, for one operation
    (a save, or a whole import where every card is also a neighbour of later ones). ``embed``
    turns texts into unit vectors; without it topics are judged by shared content words."""

    def __init__(self, embed: Callable[[list[str]], Sequence[Sequence[float] | None]] | None = None) -> None:
        self._embed = embed
        self._statements: dict[str, Statement] = {}
        self._vectors: dict[str, Sequence[float] | None] = {}

    def statement(self, text: str) -> Statement:
        found = self._statements.get(text)
        if found is None:
            found = self._statements[text] = parse(text)
        return found

    def topic(self, old: str, new: str) -> float | None:
        """Cosine of the two masked texts, or ``None`` without an embedder."""
        if self._embed is None:
            return None
        missing = [text for text in dict.fromkeys((masked(old), masked(new))) if text not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self._embed(missing)))
        a, b = self._vectors[masked(old)], self._vectors[masked(new)]
        return 0.0 if a is None or b is None else float(sum(x * y for x, y in zip(a, b)))

    def verdict(self, old: str, new: str) -> Verdict:
        first, second = self.statement(old), self.statement(new)
        if self._embed is None:
            return judge(first, second)
        return judge(first, second, lambda: self.topic(old, new) or 0.0)


def decide(
    content: str,
    created_at: datetime,
    neighbours: Sequence[Neighbour],
    *,
    duplicate_at: float,
    comparer: Comparer | None = None,
) -> Decision:
    """The one rule for every way a card arrives (``memory add``, the memory tools, MCP saves,
    import, card files from a pull): neighbours are judged most similar first, the older
    statement against the newer; the first correction or restatement decides."""
    comparer = comparer or Comparer()
    for neighbour in sorted(neighbours, key=lambda n: -n.similarity):
        newer = neighbour.created_at <= created_at
        verdict = (
            comparer.verdict(neighbour.content, content) if newer else comparer.verdict(content, neighbour.content)
        )
        if verdict.updates:
            return Decision("supersedes" if newer else "superseded", neighbour, verdict.reason)
        if verdict.relation == "restates" and neighbour.similarity >= duplicate_at:
            return Decision("duplicate", neighbour, verdict.reason)
    return Decision("add")


__all__ = [
    "Comparer",
    "Decision",
    "Neighbour",
    "Statement",
    "Verdict",
    "changed_slots",
    "correction_kind",
    "decide",
    "judge",
    "key_difference",
    "masked",
    "parse",
]
