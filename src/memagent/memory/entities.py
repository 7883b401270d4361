"""The names a store's cards use, what those names are called, and who holds which role — learned
from the cards themselves, and used to understand questions that describe instead of naming.

A team's memory introduces a code name once ("Harbor is our deploy CLI: …") and then uses only
the name ("Build Harbor with `make build`"); a question says "how do I compile the deploy CLI?".
:func:`mentions_in` reads such statements from a card's text:

- **definitions**: "X is the/our/a <description>", "X, the <description>, …", "the <description>
  (X)" — X is a *system* described by the description;
- **roles**: "X is the <role> for/of/on Y" (role nouns: lead, owner, manager, maintainer, …),
  "X owns / leads / maintains / approves / signs off on / decides / reviews Y", "ask X about Y",
  "talk to / check with X about Y", "Y is owned / approved by X" — X is a *person*.

:class:`EntityIndex` gathers the mentions of every card of a store (nothing here is tuned to one
set of cards: the vocabulary is English, the names come from the store). For a question it finds
(:meth:`EntityIndex.understand`) the systems it refers to — by name, or by a description: a
description's head noun ("the editor", "the ingestion pipeline") or, when the head is a generic
word for software (service, backend, tool, CLI, app …), the modifier right before it ("the billing
service", "the deploy tool") — and the people whose role it mentions ("the release manager").
Retrieval adds those names to the lexical query and prefers cards about the systems asked about.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from memagent.memory.lexical import STOPWORDS, tokenize

GENERIC_HEADS = frozenset(
    tokenize(
        "service services backend backends server api app application tool cli utility system platform project "
        "repo repository codebase library frontend site website program daemon bot component module"
    )
)
ROLE_NOUNS = frozenset(
    tokenize(
        "lead owner manager maintainer reviewer approver contact developer engineer architect designer director "
        "head champion expert admin administrator dba sre captain steward on-call oncall point"
    )
)
_ROLE_VERBS = (
    "owns",
    "leads",
    "maintains",
    "manages",
    "reviews",
    "approves",
    "signs off on",
    "signs off",
    "decides",
    "is responsible for",
    "is on call for",
    "handles",
    "built",
    "wrote",
    "set up",
    "designed",
    "rotates",
    "coordinates",
    "chairs",
)
_PASSIVE = (
    "owned by",
    "maintained by",
    "approved by",
    "reviewed by",
    "run by",
    "led by",
    "managed by",
    "signed off by",
    "decided by",
    "handled by",
    "goes through",
    "go through",
)
_ASK = ("ask", "talk to", "check with", "ping", "contact")
_NAME = r"(?:[A-Z][\w.+#]*(?:-[A-Za-z0-9]+)*)(?:\s+[A-Z][\w.+#]*(?:-[A-Za-z0-9]+)*){0,2}"
_STOP_PHRASE = (
    r"(?=[:;,.!?()\u2014]|\s+(?:that|which|who|where|running|written|built|with|so|because|but|and|since|when)\b|$)"
)
_DEFINITION = re.compile(rf"^(?P<name>{_NAME})\s+is\s+(?:our|the|a|an)\s+(?P<desc>[^:;,.!?()\u2014]+?){_STOP_PHRASE}")
_APPOSITIVE = re.compile(rf"^(?P<name>{_NAME}),\s+(?:our|the)\s+(?P<desc>[^:;,.!?()\u2014]+?),")
_PARENTHESIS = re.compile(rf"\b(?:our|the)\s+(?P<desc>[\w\s-]+?)\s+\((?P<name>{_NAME})\)")
_ROLE_TOPIC = re.compile(r"^(?P<role>[\w\s-]+?)\s+(?:for|of|on|at)\s+(?P<topic>.+)$")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
_NOT_NAMES = frozenset(
    "i we you he she they it this that these those there the a an our my ask talk check never "
    "always use run do don't please see since on in during after before".split()
)


@dataclass(frozen=True)
class Mention:
    """One statement a card makes about a name: a system's ``description``, or a person's
    ``role`` over a ``topic``."""

    name: str
    kind: str  # "system" or "person"
    description: str = ""
    role: str = ""
    topic: str = ""


def _clean_name(raw: str) -> str | None:
    name = " ".join(raw.split()).strip(" .'\u2019")
    if name.endswith(("'s", "\u2019s")):
        name = name[:-2]
    if not name or name.split()[0].lower() in _NOT_NAMES or len(name) > 60:
        return None
    return name


def _definition(sentence: str) -> Mention | None:
    for pattern in (_DEFINITION, _APPOSITIVE):
        match = pattern.search(sentence)
        if match is None:
            continue
        name = _clean_name(match.group("name"))
        description = " ".join(match.group("desc").split())
        if name is None or not description:
            continue
        role = _ROLE_TOPIC.match(description)
        head = tokenize(role.group("role") if role else description)
        if head and head[-1] in ROLE_NOUNS:
            return Mention(
                name,
                "person",
                role=role.group("role") if role else description,
                topic=role.group("topic") if role else "",
            )
        return Mention(name, "system", description=description)
    return None


def _roles(sentence: str) -> Iterable[Mention]:
    for verb in _ROLE_VERBS:
        match = re.match(rf"^(?P<name>{_NAME})\s+(?:also\s+|now\s+)?{re.escape(verb)}\s+(?P<topic>[^;.!?]+)", sentence)
        if match and (name := _clean_name(match.group("name"))):
            yield Mention(name, "person", role=verb, topic=match.group("topic").strip())
    for phrase in _PASSIVE:
        match = re.search(rf"^(?P<topic>[^;.!?]+?)\s+(?:is|are|was|were)?\s*{phrase}\s+(?P<name>{_NAME})", sentence)
        if match and (name := _clean_name(match.group("name"))):
            yield Mention(name, "person", role=phrase, topic=match.group("topic").strip())
    for verb in _ASK:
        match = re.search(
            rf"\b{verb}\s+(?P<name>{_NAME})\s+(?:about|before|for|on|when|if)\s+(?P<topic>[^;.!?]+)",
            sentence,
            re.IGNORECASE,
        )
        if match and match.group("name")[0].isupper() and (name := _clean_name(match.group("name"))):
            yield Mention(name, "person", role=verb, topic=match.group("topic").strip())


def mentions_in(text: str) -> list[Mention]:
    """The definitions and roles ``text`` states (see the module docstring)."""
    found: list[Mention] = []
    for sentence in _SENTENCE.split(" ".join(text.split())):
        sentence = sentence.strip().strip("`")
        definition = _definition(sentence)
        if definition is not None:
            found.append(definition)
        found.extend(_roles(sentence))
        for match in _PARENTHESIS.finditer(sentence):
            name = _clean_name(match.group("name"))
            if name is not None:
                found.append(Mention(name, "system", description=" ".join(match.group("desc").split())))
    return list(dict.fromkeys(found))


# --------------------------------------------------------------------------- the index


def _similar(a: str, b: str) -> bool:
    """Two index terms that are one word ("doc"/"document", "deploy"/"deployment")."""
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return len(short) >= 3 and long.startswith(short) and (len(short) >= 4 or len(long) >= 6)


@dataclass
class Understanding:
    """What a question refers to: ``systems`` it names or describes, ``people`` whose role it
    mentions, and the ``names`` to add to its lexical query."""

    systems: frozenset[str] = frozenset()
    people: frozenset[str] = frozenset()
    described: frozenset[str] = frozenset()  # systems found by a description, not by name
    description_terms: frozenset[str] = frozenset()  # the query's terms that made up those descriptions
    about_itself: bool = False  # the question has no other words: "what is the ingestion pipeline?"

    @property
    def names(self) -> list[str]:
        return sorted(self.described | self.people)

    def rewritten(self, query: str) -> str:
        """The question in its own words with each description replaced by the name it stands
        for ("how do I compile the deploy CLI?" → "how do I compile Harbor?")."""
        if not self.described or self.about_itself:
            return query
        name = " and ".join(sorted(self.described))
        words = list(re.finditer(r"[\w'’-]+", query))
        matched = [
            i
            for i, w in enumerate(words)
            if (terms := tokenize(w.group(0))) and all(t in self.description_terms for t in terms)
        ]
        if not matched:
            return query
        first, last = words[matched[0]], words[matched[-1]]
        start = first.start()
        if matched[0] > 0 and words[matched[0] - 1].group(0).lower() in ("the", "our", "this", "that"):
            start = words[matched[0] - 1].start()
        possessive = "'s" if last.group(0).lower().endswith(("'s", "’s")) else ""
        return query[:start] + name + possessive + query[last.end() :]

    def lexical_query(self, query: str) -> str:
        """The query for the lexical index: described systems by their names instead of their
        descriptions (the card that defines a name is not the answer to every question about
        it), and the names of the people whose role it mentions added."""
        if not self.names:
            return query
        if self.about_itself:
            return " ".join([query, *self.names])
        kept = [t for t in tokenize(query) if t not in self.description_terms]
        return " ".join([*kept, *self.names])


class MentionFinder:
    """Which of an index's systems a text mentions, and whether it names one of its people —
    one compiled pattern each, for the candidates of every search."""

    def __init__(self, systems: Iterable[str], people: Iterable[str]) -> None:
        names = sorted(systems, key=len, reverse=True)
        self._by_lower = {name.lower(): name for name in names}
        self._systems = (
            re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b", re.IGNORECASE) if names else None
        )
        words = sorted(
            {w for name in people for w in name.split() if len(w) >= 3 and w[:1].isupper()}, key=len, reverse=True
        )
        self._people = re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b") if words else None

    def systems_in(self, text: str) -> frozenset[str]:
        if self._systems is None:
            return frozenset()
        return frozenset(self._by_lower[m.lower()] for m in self._systems.findall(text) if m.lower() in self._by_lower)

    def names_someone(self, text: str) -> bool:
        return self._people is not None and self._people.search(text) is not None


@dataclass
class EntityIndex:
    """Every mention of a store's cards, by name (see the module docstring)."""

    systems: dict[str, list[str]] = field(default_factory=dict)  # name -> descriptions
    people: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # name -> (role, topic)
    _finder: MentionFinder | None = field(default=None, init=False, repr=False, compare=False)
    _descriptions: dict[str, list[tuple[str, list[str]]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _terms: dict[str, dict[str, frozenset[str]]] = field(default_factory=dict, init=False, repr=False, compare=False)
    _role_terms: dict[str, list[str]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def finder(self) -> MentionFinder:
        if self._finder is None:
            self._finder = MentionFinder(self.systems, self.people)
        return self._finder

    def description_parts(self) -> dict[str, list[tuple[str, list[str]]]]:
        """Per system: (head, modifiers) of each description, tokenized once."""
        if self._descriptions is None:
            self._descriptions = {}
            for name, descriptions in self.systems.items():
                for description in descriptions:
                    parts = [t for t in tokenize(description) if t not in STOPWORDS]
                    if parts:
                        self._descriptions.setdefault(name, []).append((parts[-1], parts[:-1]))
        return self._descriptions

    @classmethod
    def of(cls, mentions: Iterable[Mention]) -> EntityIndex:
        index = cls()
        for mention in mentions:
            if mention.kind == "system":
                index.systems.setdefault(mention.name, []).append(mention.description)
            else:
                index.people.setdefault(mention.name, []).append((mention.role, mention.topic))
        for name in list(index.people):
            if name in index.systems:  # "X is the billing backend" and "X maintains Y": still a system
                del index.people[name]
        return index

    def __bool__(self) -> bool:
        return bool(self.systems or self.people)

    def name_terms(self, kind: str) -> dict[str, frozenset[str]]:
        """Index terms of each name of one kind ("system" or "person")."""
        if kind not in self._terms:  # tokenized once per index (an index is not changed once used)
            names = self.systems if kind == "system" else self.people
            self._terms[kind] = {name: frozenset(tokenize(name)) for name in names}
        return self._terms[kind]

    def role_terms(self, role: str) -> list[str]:
        if role not in self._role_terms:
            self._role_terms[role] = tokenize(role)
        return self._role_terms[role]

    def _role_named(self, role: str, starts: set[str]) -> bool:
        """A cheap necessary condition for :func:`_holds`: the role's noun shares its first
        three letters with one of the question's terms (as every :func:`_similar` pair does)."""
        role_terms = self.role_terms(role)
        return bool(role_terms) and role_terms[-1][:3] in starts

    def understand(self, query: str) -> Understanding:
        terms = tokenize(query)
        words = [w.lower() for w in re.findall(r"[\w'-]+", query)]
        named = {n for n, t in self.name_terms("system").items() if t and t <= set(terms)}
        starts = _starts(terms)
        generic = any(t in GENERIC_HEADS for t in terms)
        described: set[str] = set()
        used: set[str] = set()
        for name, parts in self.description_parts().items():
            if name in named:
                continue
            matched = set().union(
                *(_describes(terms, words, h, m) for h, m in parts if _may_describe(h, starts, generic))
            )
            if matched:
                described.add(name)
                used |= matched
        people = {
            n
            for n, roles in self.people.items()
            if any(
                self._role_named(role, starts) and _holds(terms, role, topic, named | described, self)
                for role, topic in roles
            )
        }
        itself = bool(described) and all(t in used or t in GENERIC_HEADS for t in terms)
        return Understanding(
            frozenset(named | described), frozenset(people), frozenset(described), frozenset(used), itself
        )


def _starts(terms: Sequence[str]) -> set[str]:
    """The first three letters of each term: two :func:`_similar` terms always share them, so a
    description head or role noun whose start is not here cannot match (a filter, not a rule)."""
    return {t[:3] for t in terms}


def _may_describe(head: str, starts: set[str], generic: bool) -> bool:
    """A cheap necessary condition for :func:`_describes`: a generic head needs a generic word in
    the question, any other head a term with its first three letters."""
    return generic if head in GENERIC_HEADS else head[:3] in starts


def _describes(terms: Sequence[str], words: Sequence[str], head: str, modifiers: Sequence[str]) -> set[str]:
    """The question's terms that refer to a description (its ``head`` noun and ``modifiers``;
    none: it does not): the head noun (after "the", "our", "this", or with one of its
    modifiers), or — for a generic head — a modifier right before a generic word."""
    for i, term in enumerate(terms):
        before = terms[i - 1] if i else ""
        modified = bool(before) and any(_similar(before, m) for m in modifiers)
        if head in GENERIC_HEADS:
            if term in GENERIC_HEADS and modified:
                return {before, term}
        elif _similar(term, head) and (modified or _definite(words, term)):
            return {before, term} if modified else {term}
    return set()


def _definite(words: Sequence[str], term: str) -> bool:
    """The question says "the <term>" (or our/this/that): a thing it expects to be known."""
    for i, word in enumerate(words[1:], start=1):
        if tokenize(word)[:1] == [term] and words[i - 1] in ("the", "our", "this", "that"):
            return True
    return False


def _holds(terms: Sequence[str], role: str, topic: str, systems: set[str], index: EntityIndex) -> bool:
    """Whether the question names this role ("the release manager", "who leads …") over the same
    topic: a system it refers to, or two of the topic's words."""
    role_terms = index.role_terms(role)
    if not role_terms or not any(_similar(role_terms[-1], q) for q in terms):
        return False
    topic_terms = set(tokenize(topic))
    names = index.name_terms("system")
    if any(names.get(name, frozenset()) & topic_terms for name in systems):
        return True
    return len({q for q in terms if any(_similar(q, t) for t in topic_terms)}) >= 2


__all__ = ["EntityIndex", "GENERIC_HEADS", "Mention", "MentionFinder", "ROLE_NOUNS", "Understanding", "mentions_in"]
