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

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Iterable, Sequence

from memagent.memory.lexical import STOPWORDS, _strip_suffix

# --------------------------------------------------------------------------- vocabulary

_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "fifteen": "15", "twenty": "20",
    "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "ninety": "90", "hundred": "100",
}
_UNIT_GROUPS = {
    "duration": "ms millisecond second sec minute min hour hr day week month year",
    "size": "byte kb kib mb mib gb gib tb",
    "percent": "percent %",
}
_UNIT_OF = {word: group for group, words in _UNIT_GROUPS.items() for word in words.split()}
_WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_MONTHS = frozenset("january february march april may june july august september october november december "
                    "jan feb mar apr jun jul aug sep sept oct nov dec".split())
_SEASONS = frozenset("spring summer autumn fall winter".split())
_TIME_HEADS = frozenset("on in during over since until by as of last this next early mid late the start end "
                        "beginning middle".split())
_NEGATION = frozenset("not no never without none nothing nobody neither nor cannot".split())
_ENDINGS = frozenset("retired decommissioned deprecated disabled removed".split())  # the thing itself ended
_ADDITIONS = frozenset("also too additionally another".split())
_CHANGE = frozenset(
    "now since moved move migrated migrate switched switch changed change raised raise lowered lower cut reduced "
    "increased shortened extended bumped upgraded downgraded replaced replace dropped drop removed renamed scaled "
    "became become took taken went longer anymore".split())
_REFERENCE_AFTER_CHANGE = frozenset("from off".split())  # "moved from X", "moved off X"
_REFERENCE_OBJECT = frozenset("dropped replaced removed retired".split())  # "dropped X" (X a value)
_REFERENCE_SPAN = 4
_BECAUSE = frozenset("because once so when while".split())
_DETERMINERS = frozenset("the a an we our it they people their its".split())
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
_OPPOSITE_OF: dict[str, frozenset[str]] = {}
for _pair in _OPPOSITES:
    _a, _b = (_strip_suffix(word) for word in _pair)
    _OPPOSITE_OF[_a] = _OPPOSITE_OF.get(_a, frozenset()) | {_b}
    _OPPOSITE_OF[_b] = _OPPOSITE_OF.get(_b, frozenset()) | {_a}
_NOT_KEYS = STOPWORDS | _NEGATION | _ADDITIONS | _CHANGE | _TIME_HEADS | frozenset("we our us i my".split())

_CHUNK = re.compile(r"`[^`]+`|\S+")
_EDGE = "\"'()[]{}<>,;:!?*“”‘’"
_CLOCK = re.compile(r"^\d{1,2}:\d{2}(?:am|pm)?$", re.IGNORECASE)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_NUMBER = re.compile(r"^v?\d+(?:[.,]\d+)*%?$", re.IGNORECASE)
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_QUARTER = re.compile(r"^(?:q[1-4]|h[12])$", re.IGNORECASE)

# Thresholds: how alike two statements' topics must be (masked cosine, or key overlap without an
# embedder) for a changed value to count as a correction, and for a reference to the older value.
TOPIC_UPDATE = 0.55
TOPIC_REFERENCE = 0.45
TOPIC_REPHRASED = 0.70  # a change word plus one changed value, when the keys are worded differently


# --------------------------------------------------------------------------- tokens


@dataclass(frozen=True)
class _Token:
    raw: str
    low: str
    kind: str  # word, name, acronym, number, clock, date, ident, temporal
    clause: int
    initial: bool  # first word of a sentence


def _split_chunk(chunk: str) -> list[str]:
    if chunk.startswith("`"):
        return [chunk]
    if any(mark in chunk for mark in "./_@#") and not _NUMBER.match(chunk) or _ISO_DATE.match(chunk):
        return [chunk]
    return [part for part in chunk.split("-") if part]


def _kind(raw: str, low: str) -> str:
    if raw.startswith("`") or _ISO_DATE.match(raw):
        return "date" if _ISO_DATE.match(raw) else "ident"
    if _CLOCK.match(raw):
        return "clock"
    month = low in _MONTHS and (raw[0].isupper() or len(low) > 3 and low != "may")  # "may" is a verb
    if _YEAR.match(raw) or _QUARTER.match(raw) or low in _SEASONS or month:
        return "temporal"
    if _NUMBER.match(raw) or low in _NUMBER_WORDS:
        return "number"
    if low.rstrip("s") in _WEEKDAYS:
        return "weekday"
    if any(mark in raw for mark in "./_@#") or (any(c.isdigit() for c in raw) and any(c.isalpha() for c in raw)):
        return "ident"
    if low in STOPWORDS or low in _NOT_KEYS:
        return "word"
    if len(raw) >= 2 and raw.isupper():
        return "acronym"
    if raw[0].isupper() or any(c.isupper() for c in raw[1:]):
        return "name"
    return "word"


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    clause, initial, after_colon = 0, True, False
    for match in _CHUNK.finditer(text.replace("\u2019", "'")):
        chunk = match.group(0)
        ends_clause = chunk.rstrip("\"')]}*”’")[-1:] in {",", ";", ":", ".", "!", "?"} or chunk in {"—", "–"}
        ends_sentence = chunk.rstrip("\"')]}*”’")[-1:] in {".", ";", "!", "?"}
        core = chunk if chunk.startswith("`") else chunk.strip(_EDGE).rstrip(".")
        if core.endswith("'s"):
            core = core[:-2]
        for raw in _split_chunk(core):
            raw = raw.strip(_EDGE)
            if not raw:
                continue
            low = raw.strip("`").lower()
            kind = _kind(raw, low)
            if len(raw) == 1 and raw.isupper() and raw != "I" and not initial:
                kind = "ident"  # a label: "consumer A", "plan B"
            elif after_colon and kind == "name" and raw[1:].islower():
                kind = "word"  # "Jon: Agreed!", "Decision: Use …": a capital after a colon
            tokens.append(_Token(raw, low, kind, clause, initial))
            initial = after_colon = False
        if ends_clause:
            clause += 1
        if ends_sentence:
            initial = True
        after_colon = chunk.endswith(":")
    return tokens


# --------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class Statement:
    """What :func:`judge` compares; see the module docstring."""

    text: str
    keys: frozenset[str]
    values: dict[str, frozenset[str]] = field(default_factory=dict)
    references: frozenset[str] = frozenset()  # values named as no longer so
    word_references: frozenset[str] = frozenset()  # ... and words ("no longer refreshed")
    event: tuple[str, ...] = ()  # the date an event statement opens with
    negated: bool = False
    ended: bool = False  # "no longer", "anymore", "switched off", "retired": what it said stopped
    additive: bool = False
    changes: bool = False
    initials: frozenset[str] = frozenset()  # capitalised first words: a name or a plain word

    def all_values(self) -> frozenset[str]:
        return frozenset(v for values in self.values.values() for v in values)


def _stem(word: str) -> str:
    return _strip_suffix(word.lower())


def _temporal_spans(tokens: Sequence[_Token]) -> set[int]:
    """Positions of date phrases ("on 12 March 2026", "since mid-April", "in Q2", "last spring"):
    a temporal word with its preposition, modifiers and day or year numbers."""
    taken: set[int] = set()
    for i, token in enumerate(tokens):
        if token.kind != "temporal":
            continue
        taken.add(i)
        j = i - 1
        while j >= 0 and (tokens[j].low in _TIME_HEADS or tokens[j].kind == "number" and len(tokens[j].low) <= 2):
            taken.add(j)
            j -= 1
        j = i + 1
        while j < len(tokens) and (tokens[j].kind in ("number", "temporal") and len(tokens[j].low) in (1, 2, 4)
                                   or tokens[j].low in ("holidays", "quarter")):
            taken.add(j)
            j += 1
    return taken


def _leading_event(tokens: Sequence[_Token], temporal: set[int]) -> tuple[str, ...]:
    """The date an event statement opens with ("On 12 March 2026 …", "Last spring …"); not a
    "since" qualifier, which dates a change rather than an event."""
    lead = []
    for i, token in enumerate(tokens):
        if i not in temporal:
            break
        lead.append(token)
    if not lead or lead[0].low in ("since", "as") or not any(t.kind == "temporal" for t in lead):
        return ()
    return tuple(t.low for t in lead if t.kind in ("temporal", "number"))


def _unit_after(tokens: Sequence[_Token], i: int, skip: set[int]) -> str:
    for j in range(i + 1, min(i + 3, len(tokens))):
        if j in skip or tokens[j].clause != tokens[i].clause:
            return ""
        word = tokens[j].low.rstrip("s") if tokens[j].low not in ("ms", "s") else tokens[j].low
        if word in _UNIT_OF:
            return _UNIT_OF[word]
        if tokens[j].kind == "word" and tokens[j].low not in _NOT_KEYS:
            return _stem(tokens[j].low)
        if tokens[j].low not in ("of", "per"):
            return ""
    return ""


def _value_slot(tokens: Sequence[_Token], i: int, skip: set[int]) -> tuple[str, str] | None:
    token = tokens[i]
    if token.kind == "number":
        number = _NUMBER_WORDS.get(token.low, token.low.lstrip("v"))
        unit = _unit_after(tokens, i, skip)
        return (f"count:{unit}" if unit else "number"), number
    if token.kind in ("clock", "date", "ident"):
        return token.kind, token.low.strip("`")
    if token.kind == "weekday":
        return "weekday", token.low.rstrip("s")
    if token.kind == "name":
        return "name", token.low
    return None


def _explanations(tokens: Sequence[_Token], taken: set[int]) -> set[int]:
    """Positions of reasons and circumstances ("because …", "once …", "after the outage",
    "since the storage upgrade"), to the end of their clause: they explain a fact, not state it."""
    found: set[int] = set()
    for i, token in enumerate(tokens):
        following = tokens[i + 1].low if i + 1 < len(tokens) else ""
        starts = token.low in _BECAUSE or (token.low in ("after", "since") and following in _DETERMINERS)
        if not starts or i in taken:
            continue
        for j in range(i, len(tokens)):
            if tokens[j].clause != token.clause:
                break
            found.add(j)
    return found


def _reference_start(tokens: Sequence[_Token], i: int) -> tuple[int, bool] | None:
    """Where a reference to an earlier state starts after token ``i``, and whether plain words
    count there (they do after "no longer", "instead of", "rather than" and "from … to"; after
    "…, not" and "dropped" only values do)."""
    token, low = tokens[i], tokens[i].low
    following = tokens[i + 1].low if i + 1 < len(tokens) else ""
    if low in _REFERENCE_AFTER_CHANGE:
        clause_words = {t.low for t in tokens[:i] if t.clause == token.clause}
        if clause_words & _CHANGE or any(t.low == "to" for t in tokens[i + 1:i + 2 + _REFERENCE_SPAN]):
            return i + 1, True
    if (low, following) in (("instead", "of"), ("rather", "than"), ("no", "longer")):
        return i + 2, True
    if low == "not" and i > 0 and tokens[i - 1].clause < token.clause:
        return i + 1, False
    if low in _REFERENCE_OBJECT:
        return i + 1, False
    return None


def _references(tokens: Sequence[_Token]) -> tuple[frozenset[str], frozenset[str]]:
    """What the statement says no longer holds: (values, stems of words) named after "from"/"off"
    (in a clause with a change word, or "from X to Y"), "instead of", "rather than", "no longer",
    "…, not" and "dropped"."""
    values: set[str] = set()
    words: set[str] = set()
    for i, token in enumerate(tokens):
        found = _reference_start(tokens, i)
        if found is None:
            continue
        start, plain_words = found
        for t in tokens[start:start + _REFERENCE_SPAN]:
            if t.clause != token.clause or (t.low == "to" and token.low in _REFERENCE_AFTER_CHANGE):
                break
            if t.kind in ("number", "clock", "date", "ident", "name", "weekday"):
                values.add(_NUMBER_WORDS.get(t.low, t.low.lstrip("v").strip("`")).rstrip("s") if t.kind == "weekday"
                           else _NUMBER_WORDS.get(t.low, t.low.lstrip("v").strip("`")))
            elif plain_words and t.low not in STOPWORDS:
                words.add(_stem(t.low))
    return frozenset(values), frozenset(words)


def parse(text: str) -> Statement:
    """Read one statement (see the module docstring)."""
    tokens = _tokens(text)
    temporal = _temporal_spans(tokens)
    skipped = temporal | _explanations(tokens, temporal)
    keys: set[str] = set()
    initials: set[str] = set()
    values: dict[str, set[str]] = {}
    if len(tokens) > 1 and tokens[0].kind == "name" and tokens[1].clause > tokens[0].clause \
            and text.lstrip().startswith(tokens[0].raw + ":"):
        skipped = skipped | {0}  # "Jon: …": who says it, not what is said
    for i, token in enumerate(tokens):
        if i in skipped:
            continue
        if token.kind == "name" and token.initial and not _continues_name(tokens, i):
            initials.add(_stem(token.low))  # "Alice owns …" or "Deploys happen …": decided by the other statement
            keys.add(_stem(token.low))
            continue
        slot = _value_slot(tokens, i, skipped)
        if slot is not None:
            values.setdefault(slot[0], set()).add(slot[1])
        elif token.kind in ("word", "acronym", "name") and token.low not in _NOT_KEYS and len(token.low) > 1:
            keys.add(_stem(token.low))
    lows = [t.low for t in tokens]
    joined = " " + " ".join(lows) + " "
    references, word_references = _references(tokens)
    ended = (" no longer " in joined or " any more " in joined or "anymore" in lows or bool(set(lows) & _ENDINGS)
             or " switched off " in joined or " turned off " in joined or " shut down " in joined)
    negated = ended or any(low in _NEGATION or low.endswith("n't") for low in lows)
    return Statement(
        text=text, keys=frozenset(keys), values={k: frozenset(v) for k, v in values.items()},
        references=references, word_references=word_references, event=_leading_event(tokens, temporal),
        negated=negated, ended=ended,
        additive=bool(set(lows) & _ADDITIONS) or " as well " in joined or " in addition " in joined,
        changes=bool(set(lows) & _CHANGE), initials=frozenset(initials),
    )


def _continues_name(tokens: Sequence[_Token], i: int) -> bool:
    """A capitalised first word followed by another capitalised word ("Marta Kowalski …") is a name."""
    return i + 1 < len(tokens) and tokens[i + 1].kind == "name" and tokens[i + 1].clause == tokens[i].clause


def masked(text: str) -> str:
    """``text`` with its values and dates replaced by placeholders: what an embedder should compare
    to tell whether two statements are about the same slot."""
    tokens = _tokens(text)
    temporal = _temporal_spans(tokens)
    words = []
    for i, token in enumerate(tokens):
        if i in temporal:
            continue
        slot = _value_slot(tokens, i, temporal)
        words.append("X" if slot is not None and slot[0] != "name" else token.raw.strip("`"))
    return " ".join(words)


# --------------------------------------------------------------------------- comparing


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
            if a != b and (a + b in other or _stem(a + b) in other):
                gone |= {a, b}
    return words - gone


def key_difference(old: Statement, new: Statement) -> tuple[set[str], set[str]]:
    """Content words only the older and only the newer statement use (forms of one word match)."""
    only_old = _joined_compounds(_unmatched(old.keys, new.keys), set(new.keys))
    only_new = _joined_compounds(_unmatched(new.keys, old.keys), set(old.keys))
    return only_old, only_new


def _opposed(only_old: set[str], only_new: set[str]) -> bool:
    return any(_OPPOSITE_OF.get(word, frozenset()) & only_old for word in only_new)


def changed_slots(old: Statement, new: Statement) -> list[str]:
    """The value slots both statements fill, with different values."""
    changed = []
    for slot in sorted(old.values.keys() & new.values.keys()):
        if old.values[slot] != new.values[slot] and not (slot == "name" and (
                old.values[slot] <= new.values[slot] or new.values[slot] <= old.values[slot])):
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
    if changes == 2 and words_differ and len(only_old) <= 1 and kind is not None and new.changes \
            and topic >= TOPIC_REPHRASED:
        return Verdict("updates", f"a change, reworded ({kind})", kind)
    if _retuned(slots, only_old, words_differ, new) and topic >= TOPIC_REPHRASED and not (opposite or negation):
        return Verdict("updates", "several amounts changed at once", "value")
    if changes >= 2:
        return Verdict("distinct", "differs in more than one place (another subject)")
    return Verdict("distinct", "another subject or relation")


def _same_topic(old: Statement, new: Statement, only_old: set[str], only_new: set[str], negation: bool,
                renamed: bool) -> bool:
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


def decide(content: str, created_at: datetime, neighbours: Sequence[Neighbour], *, duplicate_at: float,
           comparer: Comparer | None = None) -> Decision:
    """The one rule for every way a card arrives (``memory add``, the memory tools, MCP saves,
    import, card files from a pull): neighbours are judged most similar first, the older
    statement against the newer; the first correction or restatement decides."""
    comparer = comparer or Comparer()
    for neighbour in sorted(neighbours, key=lambda n: -n.similarity):
        newer = neighbour.created_at <= created_at
        verdict = (comparer.verdict(neighbour.content, content) if newer
                   else comparer.verdict(content, neighbour.content))
        if verdict.updates:
            return Decision("supersedes" if newer else "superseded", neighbour, verdict.reason)
        if verdict.relation == "restates" and neighbour.similarity >= duplicate_at:
            return Decision("duplicate", neighbour, verdict.reason)
    return Decision("add")


__all__ = [
    "Comparer", "Decision", "Neighbour", "Statement", "Verdict", "changed_slots", "correction_kind", "decide", "judge",
    "key_difference", "masked", "parse",
]
