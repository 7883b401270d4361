"""Dates and periods a text mentions, as time windows: "On 12 March 2026 …", "since April",
"in Q2", "last spring", "the January outage", "last week".

:func:`periods_in` reads a card's content relative to when it was written (so "last spring" in a
card from September 2026 is spring 2026) and a question relative to today. Each mention becomes
a half-open UTC window ``[start, end)`` as wide as what it names: a day, a week, a month (or a
third of one: "early", "mid", "late"), a quarter, a season (meteorological, northern: spring is
March–May), a year.

Dates are parsed by ``dateparser`` (``DateDataParser.get_date_data``: English only, past dates
preferred, with its own granularity — day, week, month, year). What it is given is found here:
runs of date words that name a date (a month, weekday, year or full date: "on 4th October, 2023",
"the December 2025"; or a qualified unit: "last week", "two weeks ago"), so "at 04:30", "a
second" or "we" are never read as dates. Seasons, quarters and halves, which dateparser does not
know, come from a small vocabulary. A parse costs a couple of milliseconds, and about half a
second on first use (the import and the first parse): a text is only parsed when it contains a
word a date can be made of (:func:`mentions_time`), only its first ``MAX_PHRASES`` date phrases
within ``MAX_CHARS`` are parsed, and dateparser is imported only inside these functions (never
on the ``--help`` or ``tasks`` paths).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import islice

Period = tuple[datetime, datetime]

MAX_CHARS = 600  # parse at most this much of a text (the dates of a card are near its start)
MAX_PHRASES = 12  # and at most this many date phrases of it (a parse costs milliseconds)

_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_WORDS = frozenset(_MONTHS) | frozenset(m[:3] for m in _MONTHS) | {"sept"}
_WEEKDAYS = frozenset(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
_RELATIVE = frozenset(("yesterday", "today", "tomorrow", "ago", "week", "weeks"))
_SEASON_MONTH = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_THIRDS = {"early": (1, 11), "mid": (11, 21), "late": (21, 32)}
_WORD = re.compile(r"[A-Za-z]+|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}|\d+")
_QUARTER = re.compile(r"\b(?:Q([1-4])|H([12]))(?:\s+(?:of\s+)?((?:19|20)\d\d))?\b")
_ORDINAL_QUARTER = re.compile(r"\b(first|second|third|fourth) quarter(?:\s+of\s+((?:19|20)\d\d))?\b", re.I)
_SEASON = re.compile(
    r"\b(?:(last|this|next|early|late)\s+)?(spring|summer|autumn|fall|winter)(?:\s+(?:of\s+)?((?:19|20)\d\d))?\b", re.I
)
_MODIFIED_MONTH = re.compile(r"\b(early|mid|late)[\s-]+(?=" + "|".join(_MONTHS) + r")", re.I)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


_MAY_CONTEXT = frozenset("in since of during early mid late last this next until by from to before after the".split())


def _is_month(word: str, previous: str, following: str) -> bool:
    """A month name: a full name ("march", "March") or a capitalised abbreviation ("Mar"); "May"
    only capitalised and where a month goes ("in May", "May 2026"), not "May I ask …"."""
    low = word.lower()
    if low not in _MONTH_WORDS:
        return False
    if low == "may":
        day_before = previous[:1].isdigit() and len(previous.rstrip("stndrh")) <= 2  # "1 May", "3rd May"
        return word == "May" and (previous.lower() in _MAY_CONTEXT or following[:1].isdigit() or day_before)
    return low in _MONTHS or word[:1].isupper()


def mentions_time(text: str) -> bool:
    """Whether ``text`` has a word a date could be made of (cheap; decides whether to parse)."""
    words = _WORD.findall(text[:MAX_CHARS])
    for i, word in enumerate(words):
        low = word.lower()
        previous, following = (words[i - 1] if i else ""), (words[i + 1] if i + 1 < len(words) else "")
        if (
            _is_month(word, previous, following)
            or low in _WEEKDAYS
            or low in _RELATIVE
            or low in _SEASON_MONTH
            or low in ("quarter", "month", "year")
            or "-" in word
            or "/" in word
            or (word.isdigit() and len(word) == 4 and word[:2] in ("19", "20"))
        ):
            return True
    return bool(_QUARTER.search(text[:MAX_CHARS]))


# --------------------------------------------------------------------------- windows


def _month(year: int, month: int) -> Period:
    start = datetime(year, month, 1, tzinfo=UTC)
    return start, datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)


def _months(year: int, first: int, count: int) -> Period:
    start = _month(year, first)[0]
    last_year, last_month = year + (first + count - 2) // 12, (first + count - 2) % 12 + 1
    return start, _month(last_year, last_month)[1]


def _latest_start(candidates: list[Period], base: datetime, before: bool) -> Period:
    """The latest window starting at or before ``base`` (``before``: ending before it too)."""
    usable = [p for p in candidates if (p[1] <= base if before else p[0] <= base)]
    return max(usable) if usable else min(candidates)


def _season(word: str, modifier: str | None, year: str | None, base: datetime) -> Period:
    first = _SEASON_MONTH[word.lower()]
    if year:
        return _months(int(year) - (first == 12), first, 3)
    occurrences = [_months(y, first, 3) for y in range(base.year - 2, base.year + 2)]
    modifier = (modifier or "").lower()
    if modifier == "next":
        return min(p for p in occurrences if p[0] > base)
    if modifier == "last":
        current = _latest_start(occurrences, base, before=False)
        return _latest_start(occurrences, base, before=True) if current[1] > base else current
    return _latest_start(occurrences, base, before=False)


def _quarter(number: int, months: int, year: str | None, base: datetime) -> Period:
    first = (number - 1) * months + 1
    if year:
        return _months(int(year), first, months)
    return _latest_start([_months(y, first, months) for y in (base.year - 1, base.year)], base, before=False)


def _vocabulary_periods(text: str, base: datetime) -> Iterator[tuple[int, int, Period, bool]]:
    """(start, end, window, relative) of seasons, quarters and halves, which dateparser does not read."""
    for match in _SEASON.finditer(text):
        window = _season(match.group(2), match.group(1), match.group(3), base)
        yield match.start(), match.end(), window, match.group(3) is None
    for match in _QUARTER.finditer(text):
        quarter, half = match.group(1), match.group(2)
        window = (
            _quarter(int(quarter), 3, match.group(3), base) if quarter else _quarter(int(half), 6, match.group(3), base)
        )
        yield match.start(), match.end(), window, match.group(3) is None
    for match in _ORDINAL_QUARTER.finditer(text):
        yield (
            match.start(),
            match.end(),
            _quarter(_ORDINALS[match.group(1).lower()], 3, match.group(2), base),
            match.group(2) is None,
        )


# --------------------------------------------------------------------------- dateparser

_TOKEN = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}|\d+(?:st|nd|rd|th)?|[A-Za-z]+|,")
_QUALIFIERS = frozenset(("last", "this", "next", "ago", "past", "previous", "coming"))
_UNITS = frozenset(("day", "days", "week", "weeks", "weekend", "month", "months", "year", "years"))
_COUNTS = frozenset(
    (
        "a",
        "an",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "few",
        "couple",
        "of",
    )
)
_DAYS = frozenset(("yesterday", "today", "tomorrow"))


def _token_kind(word: str, previous: str, following: str) -> str | None:
    """What a word can be inside a date phrase: an ``anchor`` (it names a date), ``glue``
    (a day number, a count, "the", ",", "of"), a ``qualifier`` or a ``unit``; ``None`` outside."""
    low = word.lower()
    if _is_month(word, previous, following) or low in _WEEKDAYS or low in _DAYS or "-" in word or "/" in word:
        return "anchor"
    if word.isdigit() and len(word) == 4 and word[:2] in ("19", "20"):
        return "anchor"
    if low in _QUALIFIERS:
        return "qualifier"
    if low in _UNITS:
        return "unit"
    if word[:1].isdigit() and len(word.rstrip("stndrh")) <= 2 or low in _COUNTS or low in ("the", ","):
        return "glue"
    return None


def _date_phrases(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every run of date words that names a date: a month, weekday, year or
    full date ("on 4th October, 2023", "August 3, 2023", "the December 2025"), or a qualified unit
    ("last week", "two weeks ago", "this year")."""
    tokens = list(_TOKEN.finditer(text))
    words = [t.group(0) for t in tokens]
    kinds = [
        _token_kind(w, words[i - 1] if i else "", words[i + 1] if i + 1 < len(words) else "")
        for i, w in enumerate(words)
    ]
    i = 0
    while i < len(tokens):
        if kinds[i] is None:
            i += 1
            continue
        j = i
        while j + 1 < len(tokens) and kinds[j + 1] is not None:
            j += 1
        run, end = kinds[i : j + 1], j + 1
        while i <= j and words[i].lower() in ("the", ",", "of"):
            i += 1
        while j >= i and words[j] in (",", "the", "of", "a", "an"):
            j -= 1
        if i <= j and ("anchor" in run or ("qualifier" in run and "unit" in run)):
            yield tokens[i].start(), tokens[j].end()
        i = end


def _parsed_periods(text: str, base: datetime, masked: list[tuple[int, int]]) -> Iterator[tuple[Period, bool]]:
    """Windows of the date phrases dateparser reads (see :func:`_date_phrases`), each with
    whether it is relative (no year or full date in it: read from ``base``)."""
    from dateparser.date import DateDataParser

    plain = list(text)
    for start, end in masked:  # what the vocabulary read is not handed to dateparser again
        plain[start:end] = " " * (end - start)
    cleaned = _MODIFIED_MONTH.sub(lambda m: m.group(1) + " ", "".join(plain))
    settings = {"RELATIVE_BASE": base.astimezone(UTC).replace(tzinfo=None), "PREFER_DATES_FROM": "past"}
    parser = DateDataParser(languages=["en"], settings=settings)
    for start, end in islice(_date_phrases(cleaned), MAX_PHRASES):
        phrase = cleaned[start:end]
        found = parser.get_date_data(phrase)
        if found.date_obj is None:  # "last December", "last week of October 2023": the named part
            named = " ".join(w for w in phrase.split() if _token_kind(w, "in", "") in ("anchor", "glue"))
            found = parser.get_date_data(named) if named and named != phrase else found
        if found.date_obj is None or found.period not in ("day", "week", "month", "year"):
            continue
        before = cleaned[max(0, start - 8) : start].lower().split()
        modifier = next((w for w in reversed(before) if w in _THIRDS), None)
        yield _window(found.date_obj, found.period, modifier), _is_relative(phrase)


def _window(moment: datetime, granularity: str, modifier: str | None) -> Period:
    moment = _utc(moment)
    day = datetime(moment.year, moment.month, moment.day, tzinfo=UTC)
    if granularity == "day":
        return day, day + timedelta(days=1)
    if granularity == "week":
        start = day - timedelta(days=day.weekday())
        return start, start + timedelta(days=7)
    if granularity == "year":
        return datetime(moment.year, 1, 1, tzinfo=UTC), datetime(moment.year + 1, 1, 1, tzinfo=UTC)
    start, end = _month(moment.year, moment.month)
    if modifier in _THIRDS:
        first, last = _THIRDS[modifier]
        return start.replace(day=first), min(end, start + timedelta(days=last - 1))
    return start, end


def _mentions(text: str, base: datetime) -> list[tuple[Period, bool]]:
    """Every (window, relative) ``text`` names; relative: read from ``base`` ("last week", "in
    March") rather than stated in full ("12 March 2026", "Q2 2026")."""
    text = text[:MAX_CHARS]
    if not mentions_time(text):
        return []
    base = _utc(base)
    vocabulary = list(_vocabulary_periods(text, base))
    found = [(window, relative) for _, _, window, relative in vocabulary]
    found += list(_parsed_periods(text, base, [(s, e) for s, e, _, _ in vocabulary]))
    return found


def periods_in(text: str, base: datetime) -> list[Period]:
    """Every window ``text`` names, read relative to ``base`` (when it was written, or now);
    sorted and without repeats."""
    return sorted({window for window, _ in _mentions(text, base)})


def asked_period(text: str, now: datetime) -> tuple[Period, bool] | None:
    """The one window a question asks about — the hull of what it names, where a date stated in
    full overrides relative words around it ("the week before August 3, 2023" is about August) —
    and whether it was counted back from now in units ("last week", "a year ago"; not "last
    December", which names its month)."""
    found = _mentions(text, now)
    stated = [window for window, relative in found if not relative]
    window = hull(stated or [window for window, _ in found])
    if window is None:
        return None
    words = {w.lower() for w in _WORD.findall(text)}
    counted_back = not stated and bool(words & _QUALIFIERS) and bool(words & _UNITS)  # "last week", "a year ago"
    return window, counted_back


def _is_relative(phrase: str) -> bool:
    words = [w.lower() for w in _WORD.findall(phrase)]
    return not any(len(w) == 4 and w.isdigit() or "-" in w or "/" in w for w in words)


def hull(periods: list[Period]) -> Period | None:
    """The smallest window holding all of ``periods``."""
    if not periods:
        return None
    return min(p[0] for p in periods), max(p[1] for p in periods)


def overlaps(a: Period, b: Period) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def warm_up() -> None:
    """Import dateparser and parse once (about half a second), off the critical path."""
    periods_in("on 12 March 2026", datetime.now(UTC))


__all__ = [
    "MAX_CHARS",
    "MAX_PHRASES",
    "Period",
    "asked_period",
    "hull",
    "mentions_time",
    "overlaps",
    "periods_in",
    "warm_up",
]
