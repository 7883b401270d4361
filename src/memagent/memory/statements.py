"""A statement read into the parts a correction is judged on.

:func:`parse` reads one sentence into

- **keys**: its content words (stemmed), the subject and the relation;
- **values**, by slot: numbers with their unit (durations, sizes, counts of a noun), clock times,
  weekdays, dates written as digits, capitalised names, identifiers (``v2``, ``harbor.yaml``);
- **qualifiers**: when it happened ("On 12 March 2026 …", "in August", "since May"), which are
  not values: the same fact told with its date is the same fact;
- **references** to what no longer holds: "from 10 to 2", "instead of 15", "no longer …",
  "…, not 07:00", "moved off X", "dropped X";
- **markers**: negation, change words ("now", "raised", "moved"), additions ("also", "too").

:func:`masked` is the text with its values replaced, so an embedder compares topics, not values.
How two parsed statements are compared: :mod:`memagent.memory.corrections`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memagent.memory.lexical import STOPWORDS, _strip_suffix

# --------------------------------------------------------------------------- vocabulary

_NUMBER_WORDS = {
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
    "fifteen": "15",
    "twenty": "20",
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "sixty": "60",
    "ninety": "90",
    "hundred": "100",
}
_UNIT_GROUPS = {
    "duration": "ms millisecond second sec minute min hour hr day week month year",
    "size": "byte kb kib mb mib gb gib tb",
    "percent": "percent %",
}
_UNIT_OF = {word: group for group, words in _UNIT_GROUPS.items() for word in words.split()}
_WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_SEASONS = frozenset("spring summer autumn fall winter".split())
_TIME_HEADS = frozenset(
    "on in during over since until by as of last this next early mid late the start end beginning middle".split()
)
_NEGATION = frozenset("not no never without none nothing nobody neither nor cannot".split())
_ENDINGS = frozenset("retired decommissioned deprecated disabled removed".split())  # the thing itself ended
_ADDITIONS = frozenset("also too additionally another".split())
_CHANGE = frozenset(
    "now since moved move migrated migrate switched switch changed change raised raise lowered lower cut reduced "
    "increased shortened extended bumped upgraded downgraded replaced replace dropped drop removed renamed scaled "
    "became become took taken went longer anymore".split()
)
_REFERENCE_AFTER_CHANGE = frozenset("from off".split())  # "moved from X", "moved off X"
_REFERENCE_OBJECT = frozenset("dropped replaced removed retired".split())  # "dropped X" (X a value)
_REFERENCE_SPAN = 4
_BECAUSE = frozenset("because once so when while".split())
_DETERMINERS = frozenset("the a an we our it they people their its".split())
_OPPOSITES = (
    ("allowed", "forbidden"),
    ("allowed", "prohibited"),
    ("allowed", "banned"),
    ("permitted", "forbidden"),
    ("enabled", "disabled"),
    ("enable", "disable"),
    ("on", "off"),
    ("true", "false"),
    ("yes", "no"),
    ("always", "never"),
    ("required", "optional"),
    ("mandatory", "optional"),
    ("include", "exclude"),
    ("included", "excluded"),
    ("before", "after"),
    ("increase", "decrease"),
    ("more", "less"),
    ("higher", "lower"),
    ("larger", "smaller"),
    ("faster", "slower"),
    ("public", "private"),
    ("sync", "async"),
    ("synchronous", "asynchronous"),
    ("accept", "reject"),
    ("accepted", "rejected"),
    ("like", "dislike"),
    ("likes", "dislikes"),
    ("prefer", "avoid"),
    ("prefers", "avoids"),
    ("use", "avoid"),
    ("uses", "avoids"),
    ("start", "stop"),
    ("open", "closed"),
    ("up", "down"),
    ("min", "max"),
    ("minimum", "maximum"),
    ("deprecated", "supported"),
    ("works", "fails"),
    ("pass", "fail"),
    ("passes", "fails"),
    ("safe", "unsafe"),
    ("stable", "unstable"),
    ("tabs", "spaces"),
    ("light", "dark"),
    ("left", "right"),
    ("first", "last"),
)
OPPOSITE_OF: dict[str, frozenset[str]] = {}
for _pair in _OPPOSITES:
    _a, _b = (_strip_suffix(word) for word in _pair)
    OPPOSITE_OF[_a] = OPPOSITE_OF.get(_a, frozenset()) | {_b}
    OPPOSITE_OF[_b] = OPPOSITE_OF.get(_b, frozenset()) | {_a}
_NOT_KEYS = STOPWORDS | _NEGATION | _ADDITIONS | _CHANGE | _TIME_HEADS | frozenset("we our us i my".split())

_CHUNK = re.compile(r"`[^`]+`|\S+")
_EDGE = "\"'()[]{}<>,;:!?*“”‘’"
_CLOCK = re.compile(r"^\d{1,2}:\d{2}(?:am|pm)?$", re.IGNORECASE)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_NUMBER = re.compile(r"^v?\d+(?:[.,]\d+)*%?$", re.IGNORECASE)
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_QUARTER = re.compile(r"^(?:q[1-4]|h[12])$", re.IGNORECASE)


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


def stem(word: str) -> str:
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
        while j < len(tokens) and (
            tokens[j].kind in ("number", "temporal")
            and len(tokens[j].low) in (1, 2, 4)
            or tokens[j].low in ("holidays", "quarter")
        ):
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
            return stem(tokens[j].low)
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
        if clause_words & _CHANGE or any(t.low == "to" for t in tokens[i + 1 : i + 2 + _REFERENCE_SPAN]):
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
        for t in tokens[start : start + _REFERENCE_SPAN]:
            if t.clause != token.clause or (t.low == "to" and token.low in _REFERENCE_AFTER_CHANGE):
                break
            if t.kind in ("number", "clock", "date", "ident", "name", "weekday"):
                values.add(
                    _NUMBER_WORDS.get(t.low, t.low.lstrip("v").strip("`")).rstrip("s")
                    if t.kind == "weekday"
                    else _NUMBER_WORDS.get(t.low, t.low.lstrip("v").strip("`"))
                )
            elif plain_words and t.low not in STOPWORDS:
                words.add(stem(t.low))
    return frozenset(values), frozenset(words)


def parse(text: str) -> Statement:
    """Read one statement (see the module docstring)."""
    tokens = _tokens(text)
    temporal = _temporal_spans(tokens)
    skipped = temporal | _explanations(tokens, temporal)
    keys: set[str] = set()
    initials: set[str] = set()
    values: dict[str, set[str]] = {}
    if (
        len(tokens) > 1
        and tokens[0].kind == "name"
        and tokens[1].clause > tokens[0].clause
        and text.lstrip().startswith(tokens[0].raw + ":")
    ):
        skipped = skipped | {0}  # "Jon: …": who says it, not what is said
    for i, token in enumerate(tokens):
        if i in skipped:
            continue
        if token.kind == "name" and token.initial and not _continues_name(tokens, i):
            initials.add(stem(token.low))  # "Alice owns …" or "Deploys happen …": decided by the other statement
            keys.add(stem(token.low))
            continue
        slot = _value_slot(tokens, i, skipped)
        if slot is not None:
            values.setdefault(slot[0], set()).add(slot[1])
        elif token.kind in ("word", "acronym", "name") and token.low not in _NOT_KEYS and len(token.low) > 1:
            keys.add(stem(token.low))
    lows = [t.low for t in tokens]
    joined = " " + " ".join(lows) + " "
    references, word_references = _references(tokens)
    ended = (
        " no longer " in joined
        or " any more " in joined
        or "anymore" in lows
        or bool(set(lows) & _ENDINGS)
        or " switched off " in joined
        or " turned off " in joined
        or " shut down " in joined
    )
    negated = ended or any(low in _NEGATION or low.endswith("n't") for low in lows)
    return Statement(
        text=text,
        keys=frozenset(keys),
        values={k: frozenset(v) for k, v in values.items()},
        references=references,
        word_references=word_references,
        event=_leading_event(tokens, temporal),
        negated=negated,
        ended=ended,
        additive=bool(set(lows) & _ADDITIONS) or " as well " in joined or " in addition " in joined,
        changes=bool(set(lows) & _CHANGE),
        initials=frozenset(initials),
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
