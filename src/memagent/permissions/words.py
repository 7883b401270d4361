"""The vocabulary of a parsed shell command: words with their known and run-time parts, the
simple commands bash runs, redirections, and what a walk over a command found.

Shared by the walk over bash's grammar (:mod:`.shell`) and the reading of what a command runs
in turn (:mod:`.runs`).
"""

from __future__ import annotations

from dataclasses import dataclass, field


class Hole(str):
    """A part of a word that bash decides at run time (``$HOME``, ``$(date)``), as written."""


@dataclass(frozen=True)
class Word:
    """One shell word: its literal parts, and :class:`Hole` parts where bash decides at run time."""

    parts: tuple[str, ...]
    source: str
    pattern: bool = False  # holds an unquoted * ? or [ that bash may expand to file names

    @property
    def literal(self) -> str | None:
        """The word as bash passes it, or None when any part is decided at run time."""
        return None if any(isinstance(p, Hole) for p in self.parts) else "".join(self.parts)

    @property
    def shown(self) -> str:
        """Literal parts unquoted, the others as written: ``"$HOME/"`` shows as ``$HOME/``."""
        return "".join(self.parts)

    @property
    def known_prefix(self) -> str:
        """The literal text before the first part bash decides at run time."""
        out = []
        for part in self.parts:
            if isinstance(part, Hole):
                break
            out.append(part)
        return "".join(out)


@dataclass(frozen=True)
class SimpleCommand:
    """A command bash (or a wrapper) runs: its words, name first, redirections left out."""

    words: tuple[Word, ...]
    context: str = ""  # where it sits: "" at the top, "$( )", "bash -c", "after xargs" …
    open_tail: bool = False  # the wrapper adds arguments of its own (xargs, find -exec)

    @property
    def argv(self) -> list[str] | None:
        """The words as bash would pass them, or None when any is decided at run time."""
        literal = [w.literal for w in self.words]
        return None if self.open_tail or any(w is None for w in literal) else [w for w in literal if w is not None]

    @property
    def shown(self) -> list[str]:
        return [w.shown for w in self.words]

    @property
    def name(self) -> str | None:
        return self.words[0].literal if self.words else None


@dataclass(frozen=True)
class Redirect:
    operator: str
    target: Word | None


@dataclass
class Findings:
    commands: list[SimpleCommand] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    complex: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)

    def add_complex(self, why: str) -> None:
        if why not in self.complex:
            self.complex.append(why)

    def add_hidden(self, why: str) -> None:
        if why not in self.hidden:
            self.hidden.append(why)


# ---------------------------------------------------------------------------------- quoting


def _unescape_plain(text: str) -> str:
    """An unquoted word as bash sees it: ``\\x`` is ``x``, a backslash-newline disappears."""
    out, index = [], 0
    while index < len(text):
        ch = text[index]
        if ch == "\\" and index + 1 < len(text):
            if text[index + 1] != "\n":
                out.append(text[index + 1])
            index += 2
            continue
        out.append(ch)
        index += 1
    return "".join(out)


def _unescaped_specials(text: str) -> str:
    """The characters of an unquoted word that are not escaped by a backslash."""
    out, index = [], 0
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        out.append(text[index])
        index += 1
    return "".join(out)


def _unescape_double(text: str) -> str:
    """Inside double quotes a backslash escapes only ``$ ` " \\`` and the newline."""
    out, index = [], 0
    while index < len(text):
        ch = text[index]
        if ch == "\\" and index + 1 < len(text) and text[index + 1] in '$`"\\\n':
            if text[index + 1] != "\n":
                out.append(text[index + 1])
            index += 2
            continue
        out.append(ch)
        index += 1
    return "".join(out)


__all__ = ["Findings", "Hole", "Redirect", "SimpleCommand", "Word"]
