"""Turning a user message into a memory query, or deciding there is nothing to look up.

``is_trivial`` skips turns that carry no information need (greetings, thanks, "ok", emoji), so
they neither cost a search nor inject stale cards. ``build_query`` appends recent context to
vague follow-ups ("how much?", "and that one?") whose meaning lives in earlier turns.
``query_time_range`` reads the period a query names ("in July 2022", "last week"); the ranker
uses it to prefer cards created then.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")

# Whole messages (after normalisation) that only acknowledge, greet or thank.
_TRIVIAL_PHRASES = frozenset(
    """
    hi hello hey hiya yo howdy greetings morning evening afternoon
    thanks thank thx ty cheers tysm appreciated
    ok okay k kk okie alright right sure fine cool nice great good perfect awesome excellent
    yes yeah yep yup no nope nah
    got it gotcha understood noted roger ack done lgtm wow lol haha hmm ah oh
    bye goodbye later cya
    """.split()
)
_FILLER = frozenset(
    """
    you u so much very a lot lots the that this for it is was all again good great
    thank thanks ok okay sounds looks works fine nice there man mate buddy guys everyone
    please pls just really indeed now then well done got makes sense see will do
    go ahead continue proceed carry on keep going yes yeah
    """.split()
)
_QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how can could should would is are does do did "
    "will shall may might".split()
)
# Words whose referent is somewhere earlier in the conversation.
_ANAPHORA = frozenset(
    "it its it's that this those these they them their there he she him her one ones same "
    "former latter above previous last such".split()
)
_VAGUE_MAX_WORDS = 6
_CONTEXT_TURNS = 2
_CONTEXT_CHARS = 600


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _is_symbolic(text: str) -> bool:
    """Only emoji, punctuation, symbols and spaces."""
    return all(unicodedata.category(ch)[0] in "PSZC" for ch in text)


def is_trivial(text: str) -> bool:
    """True for turns that need no memory lookup: greetings, thanks, acknowledgements,
    emoji-only, and very short statements that are not questions."""
    stripped = text.strip()
    if not stripped or _is_symbolic(stripped):
        return True
    words = _words(stripped)
    if not words:
        return True
    if all(w in _TRIVIAL_PHRASES or w in _FILLER for w in words):
        return True
    is_question = stripped.endswith("?") or words[0] in _QUESTION_WORDS
    if is_question or _looks_like_identifier(stripped) or len(words) > 2:
        return False
    # One bare word, or two where one is filler ("fix it", "go on"); "deploy staging" is a lookup.
    return len(words) == 1 or any(w in _FILLER or w in _ANAPHORA or w in _TRIVIAL_PHRASES for w in words)


def _looks_like_identifier(text: str) -> bool:
    """Short inputs such as a file name, a flag or an error code are real lookups."""
    return bool(re.search(r"[./_\-:#@]|\d", text))


def is_vague(text: str) -> bool:
    """A follow-up that cannot be understood alone: very short, or leaning on a pronoun."""
    words = _words(text)
    if not words:
        return False
    content = [
        w
        for w in words
        if w not in _QUESTION_WORDS
        and w not in _ANAPHORA
        and w not in _FILLER
        and w not in ("and", "or", "but", "about", "much", "many")
    ]
    anaphoric = any(w in _ANAPHORA for w in words)
    return len(content) <= 1 or (len(words) <= _VAGUE_MAX_WORDS and anaphoric)


def build_query(user_text: str, recent_context: Sequence[str]) -> str:
    """The memory query for ``user_text``: the message itself, plus the last turns of
    ``recent_context`` (oldest first, as given) when the message is vague on its own."""
    message = " ".join(user_text.split())
    if not recent_context or not is_vague(message):
        return message
    context: list[str] = []
    budget = _CONTEXT_CHARS
    for turn in reversed(list(recent_context)[-_CONTEXT_TURNS:]):
        turn = " ".join(turn.split())
        if not turn or budget <= 0:
            continue
        context.insert(0, turn[-budget:])
        budget -= len(turn)
    return " ".join([*context, message]) if context else message


# --------------------------------------------------------------------------- the present

_PRESENT = re.compile(
    r"\b(?:now|nowadays|currently|current|these days|today|at the moment|right now|still|anymore|"
    r"any more|latest|at present|presently|so far|as of)\b",
    re.IGNORECASE,
)


def asks_about_present(text: str) -> bool:
    """The query asks how things stand now ("which version are we on now?", "do we still…"):
    of two cards saying different things about it, the newer one is the answer."""
    return bool(_PRESENT.search(text))


# --------------------------------------------------------------------------- people

_PERSON_QUESTION = re.compile(
    r"^\W*(?:who|whom|whose)\b|\b(?:who|whom)(?:'s|\s+(?:should|do|does|can|could|would|will|to|is|are|was|"
    r"needs?|has|have|decides?|signs?|owns?|approves?|maintains?|leads?|runs?)|\s+(?:i|we|you)\s+"
    r"(?:should|need|must|can|could|ask|talk))\b|"
    r"\bwhich\s+(?:person|engineer|teammate|developer|colleague|reviewer|owner)\b|\bwhose\s+approval\b",
    re.IGNORECASE,
)


def asks_for_person(text: str) -> bool:
    """The query asks who ("who signs off on …", "whose approval do I need", "which engineer …"):
    a card that names the person answers it better than a card about the topic."""
    return bool(_PERSON_QUESTION.search(text))


# --------------------------------------------------------------------------- time references

# A statement about a period is usually made during it or some weeks after it.
_BEFORE_SLACK = timedelta(days=7)
_AFTER_SLACK = timedelta(days=45)


def query_window(text: str, now: datetime) -> tuple[datetime, datetime] | None:
    """The period a query names ("in July 2022", "mid-March", "this spring", "last week", "the
    January outage"), read relative to ``now`` by ``memory.timeline``; None when it names none.
    A month without a year is its latest occurrence not after ``now``."""
    asked = _asked(text, now)
    return None if asked is None else asked[0]


def _asked(text: str, now: datetime) -> tuple[tuple[datetime, datetime], bool] | None:
    from memagent.memory.timeline import asked_period, mentions_time

    now = now if now.tzinfo else now.replace(tzinfo=UTC)
    return asked_period(text, now) if mentions_time(text) else None


def mention_window(window: tuple[datetime, datetime], until: datetime | None = None) -> tuple[datetime, datetime]:
    """``window`` widened to whole months, then by the slack with which things are written down
    about a period (a card created in the result may be about it), and up to ``until`` for a
    period counted back from now ("last year": anything written since may be about it)."""
    start = datetime(window[0].year, window[0].month, 1, tzinfo=UTC)
    last = window[1] - timedelta(microseconds=1)
    end = datetime(last.year + (last.month == 12), last.month % 12 + 1, 1, tzinfo=UTC) + _AFTER_SLACK
    return start - _BEFORE_SLACK, max(end, until) if until is not None else end


def time_windows(text: str, now: datetime) -> tuple[tuple[datetime, datetime], tuple[datetime, datetime]] | None:
    """(the period the query names, the window in which a card about it was probably written)."""
    asked = _asked(text, now)
    if asked is None:
        return None
    window, counted_back = asked
    until = (now if now.tzinfo else now.replace(tzinfo=UTC)) if counted_back else None
    return window, mention_window(window, until)


def query_time_range(text: str, now: datetime) -> tuple[datetime, datetime] | None:
    """The window in which a card about the period the query names was probably written."""
    windows = time_windows(text, now)
    return None if windows is None else windows[1]
