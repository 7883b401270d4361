"""How the gate reads a shell command: bash's grammar (tree-sitter), failing closed.

:func:`analyse` turns a command into every *simple command* bash could run for it — at the top
level, inside ``$( )``, backticks, ``<( )``, subshells, groups, loops and function bodies, after
wrappers (``env``, ``sudo``, ``timeout 5``, ``nice -n 5``, ``xargs``, ``find -exec`` …), inside
``bash -c '…'``, ``eval '…'`` and ``trap '…'`` strings — and says two things about the whole:

- ``complex``: why allow rules cannot apply. Only a command that reduces to plain words joined
  by ``&&``, ``||``, ``;``, ``|`` (and newlines) may be approved by an allow rule. Redirections
  make a command complex (a prefix rule never approves a write it cannot see), except the
  harmless ones: descriptor duplications (``2>&1``) and ``/dev/null``. So do substitutions,
  expansions (``$HOME``) and globs anywhere, variable assignments, groups, subshells, control
  structures, functions, background jobs, ``eval``/``source``/``exec``-like builtins and shells
  started with a script string.
- ``hidden``: why some of what bash runs cannot be seen: a command name decided at run time
  (``$CMD``, ``rm${IFS}x``, ``/bin/r?``), a shell or interpreter reading commands from its
  input (``curl … | sh``, ``bash <<EOF``), a line continuation or control character that bash
  reads differently, arithmetic that evaluates variables (their text may hold commands), and a
  parse error (tree-sitter ``ERROR``/``MISSING`` nodes). The gate asks for such a command, and
  refuses it when a deny rule exists (any deny rule could match what is hidden).

Words keep what bash knows before running: literal text, with a :class:`Hole` for each part bash
decides at run time. The parser is imported on first use, so start-up and ``memagent tasks``
never pay for it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memagent.permissions.runs import CommandRuns
from memagent.permissions.words import (
    Findings,
    Hole,
    Redirect,
    SimpleCommand,
    Word,
    _unescape_double,
    _unescape_plain,
    _unescaped_specials,
)

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

MAX_NESTING = 3
_HARMLESS_TARGETS = frozenset({"/dev/null"})
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_CONTINUATION = re.compile(r"\\\r?\n")
_ARITHMETIC_TEST = re.compile(r"(?:^|\s)-(?:eq|ne|lt|le|gt|ge)(?:\s|$)")
_GLOB = frozenset("*?[")
_EXPANSIONS = frozenset(
    {"simple_expansion", "expansion", "arithmetic_expansion", "ansi_c_string", "translated_string", "brace_expression"}
)


@dataclass(frozen=True)
class ShellAnalysis:
    command: str
    commands: tuple[SimpleCommand, ...]
    redirects: tuple[Redirect, ...] = ()
    complex: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()

    @property
    def plain(self) -> bool:
        """Plain words joined by ``&&``, ``||``, ``;``, ``|``: the only shape allow rules judge."""
        return not self.complex and not self.hidden


@functools.lru_cache(maxsize=1)
def _parser() -> Parser:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


@functools.lru_cache(maxsize=256)
def analyse(command: str) -> ShellAnalysis:
    """Every simple command bash could run for ``command``, and why it is complex or hidden."""
    found = Findings()
    _analyse_into(command, found, context="", depth=0)
    return ShellAnalysis(
        command, tuple(found.commands), tuple(found.redirects), tuple(found.complex), tuple(found.hidden)
    )


def _analyse_into(command: str, found: Findings, *, context: str, depth: int) -> None:
    if depth > MAX_NESTING:
        found.add_hidden("shell code nested too deep to read")
        return
    if _CONTROL.search(command):
        found.add_hidden("a control character, which bash reads differently")
    try:
        source = command.encode("utf-8")
    except UnicodeEncodeError:
        found.add_hidden("text that is not valid UTF-8")
        return
    tree = _parser().parse(source)
    if tree.root_node.has_error:
        found.add_hidden("bash syntax the gate cannot read (a parse error)")
    _Walker(source, found, depth).statements(tree.root_node, context)


class _Walker(CommandRuns):
    """One pass over a tree: statements, then the commands inside them."""

    def __init__(self, source: bytes, found: Findings, depth: int) -> None:
        self.source = source
        self.found = found
        self.depth = depth
        self._pattern = False

    def nested(self, text: str, context: str) -> Findings:
        """Shell code inside a command (``bash -c``, ``eval`` …), read one level deeper."""
        found = Findings()
        _analyse_into(text, found, context=context, depth=self.depth + 1)
        return found

    # ------------------------------------------------------------------ statements

    def statements(self, node: Node, context: str) -> None:
        kind = node.type
        if node.is_missing or kind == "ERROR":
            self.found.add_hidden("bash syntax the gate cannot read (a parse error)")
            self._children(node, context)
        elif kind in ("program", "list"):
            self._children(node, context)
        elif kind == "pipeline":
            self._pipeline(node, context)
        elif kind == "comment":
            self._comment(node)
        elif kind == "command":
            self._command(node, context)
        elif kind == "redirected_statement":
            self._redirected(node, context)
        else:
            self._compound(node, context)

    def _children(self, node: Node, context: str) -> None:
        for child in node.children:
            if child.is_named:
                self.statements(child, context)
            elif child.type == "&":
                self.found.add_complex("a background job (&)")
            elif child.type not in (";", "&&", "||", "\n", ";;", "|", "|&", "(", ")", "{", "}"):
                self.found.add_complex(f"the shell keyword {child.type}")

    def _pipeline(self, node: Node, context: str) -> None:
        for child in node.children:
            if child.is_named:
                self.statements(child, context)
            elif child.type not in ("|", "|&"):
                self.found.add_complex(f"the shell keyword {child.type}")

    def _comment(self, node: Node) -> None:
        before = self.source[node.start_byte - 1 : node.start_byte] if node.start_byte else b"\n"
        if before not in (b" ", b"\t", b"\n", b";", b"&", b"|", b"(", b")"):
            self.found.add_hidden("a # that bash may not read as a comment")

    _COMPOUND = {
        "subshell": "a subshell ( )",
        "compound_statement": "a { } group",
        "negated_command": "a negated command (!)",
        "function_definition": "a function definition",
        "if_statement": "an if statement",
        "while_statement": "a loop",
        "for_statement": "a loop",
        "c_style_for_statement": "a loop",
        "case_statement": "a case statement",
        "variable_assignment": "a variable assignment",
        "variable_assignments": "a variable assignment",
        "declaration_command": "a declaration (declare, export …)",
        "unset_command": "unset",
        "test_command": "a [[ ]] test",
    }
    _INNER = frozenset(
        {
            "do_group",
            "elif_clause",
            "else_clause",
            "case_item",
            "compound_statement",
            "subshell",
            "negated_command",
            "function_definition",
            "if_statement",
            "while_statement",
            "for_statement",
            "c_style_for_statement",
            "case_statement",
        }
    )

    def _compound(self, node: Node, context: str) -> None:
        """Groups, loops, functions, assignments, tests: complex; the commands inside are walked."""
        kind = node.type
        why = self._COMPOUND.get(kind)
        if why is None and kind not in self._INNER:
            self.found.add_hidden(f"bash syntax the gate does not read ({kind})")
            why = kind
        self.found.add_complex(why or kind)
        if kind == "test_command":
            self._test(node)
        for child in node.children:
            if child.type in self._STATEMENT_TYPES or child.type in self._COMPOUND or child.type in self._INNER:
                self.statements(child, context)
            elif child.is_named:
                self.word(child, context)

    _STATEMENT_TYPES = frozenset({"command", "list", "pipeline", "redirected_statement", "comment", "ERROR"})

    def _test(self, node: Node) -> None:
        text = self._text(node)
        if ("$" in text or "`" in text) and _ARITHMETIC_TEST.search(text):
            self.found.add_hidden("a [[ ]] comparison that evaluates variables as arithmetic")

    def _redirected(self, node: Node, context: str) -> None:
        body = node.child_by_field_name("body")
        for child in node.children:
            if child == body or child.type in self._STATEMENT_TYPES or child.type in self._COMPOUND:
                self.statements(child, context)
            elif child.is_named:
                self.redirect(child, context)

    # ------------------------------------------------------------------ redirections

    def redirect(self, node: Node, context: str) -> None:
        kind = node.type
        if kind == "heredoc_redirect":
            self._heredoc(node, context)
            return
        if kind == "herestring_redirect":
            self.found.add_complex("a here-string (<<<)")
            for child in node.children:
                if child.is_named:
                    self.word(child, context)
            return
        if kind != "file_redirect":
            self.found.add_hidden(f"a redirection the gate does not read ({kind})")
            return
        operator = "".join(self._text(c) for c in node.children if not c.is_named)
        target_node = node.child_by_field_name("destination")
        operands = [c for c in node.children if c.is_named and c.type != "file_descriptor"]
        if len(operands) > 1:
            self.found.add_hidden("words after a redirection that the parser does not give to their command")
            for extra in operands[1:]:
                self.word(extra, context)
        target = self.word(target_node, context) if target_node is not None else None
        self.found.redirects.append(Redirect(operator, target))
        harmless = target is not None and (
            target.literal in _HARMLESS_TARGETS
            or ("&" in operator and target.literal is not None and (target.literal.isdigit() or target.literal == "-"))
        )
        if not harmless:
            self.found.add_complex("a redirection to a file")

    def _heredoc(self, node: Node, context: str) -> None:
        self.found.add_complex("a here-document (<<)")
        for child in node.children:
            if child.type == "heredoc_body":
                for inner in child.children:
                    if inner.is_named and inner.type != "heredoc_content":
                        self.word(inner, context)

    # ------------------------------------------------------------------ commands

    def _command(self, node: Node, context: str) -> None:
        words: list[Word] = []
        previous_end: int | None = None
        for child in node.children:
            field_name = _field_of(node, child)
            if child.type == "variable_assignment":
                self.found.add_complex("a variable assignment")
                self._compound_value(child, context)
            elif field_name == "redirect" or child.type.endswith("_redirect"):
                self.redirect(child, context)
                continue
            elif child.type == "command_name" or field_name in ("name", "argument"):
                target = child.children[0] if child.type == "command_name" and child.children else child
                if previous_end is not None and not self._separated(previous_end, child.start_byte):
                    self.found.add_hidden("a line continuation inside a word")
                words.append(self.word(target, context))
            elif child.is_named:
                self.found.add_hidden(f"bash syntax the gate does not read ({child.type})")
            previous_end = child.end_byte
        if words:
            self.record(SimpleCommand(tuple(words), context))

    def _compound_value(self, node: Node, context: str) -> None:
        for child in node.children:
            if child.is_named and child.type != "variable_name":
                self.word(child, context)

    def _separated(self, end: int, start: int) -> bool:
        gap = _CONTINUATION.sub("", self.source[end:start].decode("utf-8", "replace"))
        return any(ch in " \t\n" for ch in gap)

    # ------------------------------------------------------------------ words

    def word(self, node: Node, context: str) -> Word:
        """The node as a word; commands inside it (``$( )``) are walked as they run too."""
        parts: list[str] = []
        self._pattern = False
        self._parts(node, context, parts, quoted=False)
        return Word(tuple(parts), self._text(node), self._pattern)

    def _parts(self, node: Node, context: str, parts: list[str], *, quoted: bool) -> None:
        kind = node.type
        text = self._text(node)
        if kind in ("word", "number") and not quoted:
            self._unquoted(text, parts)
        elif kind == "raw_string":
            parts.append(text[1:-1] if len(text) >= 2 else Hole(text))
        elif kind == "string":
            self._string(node, context, parts)
        elif kind == "concatenation":
            for child in node.children:
                self._parts(child, context, parts, quoted=quoted)
        elif kind in ("command_substitution", "process_substitution"):
            parts.append(Hole(text))
            self._substitution(node, text)
        elif kind in _EXPANSIONS:
            parts.append(Hole(text))
            self._expansion(node, context, kind)
        else:
            parts.append(Hole(text))
            self.found.add_hidden(f"bash syntax the gate does not read ({kind!r} in a word)")

    def _string(self, node: Node, context: str, parts: list[str]) -> None:
        children = node.children
        for index, child in enumerate(children):
            if child.type == "string_content":
                parts.append(_unescape_double(self._text(child)))
            elif child.is_named:
                self._parts(child, context, parts, quoted=True)
            elif not (child.type == '"' and index in (0, len(children) - 1)):
                parts.append(Hole(self._text(child)))
                self.found.add_hidden(f"bash syntax the gate does not read ({child.type!r} in a string)")

    def _substitution(self, node: Node, text: str) -> None:
        if text.startswith("`"):
            # tree-sitter's grammar misreads backticks (two in a row, escaped ones inside): what
            # they run is not trusted to the parse; $( ) says the same and is read exactly
            self.found.add_complex("a backtick substitution")
            self.found.add_hidden("a backtick substitution (write $( ) instead)")
            self._inner_statements(node, "` `")
            return
        self.found.add_complex("a command substitution" if text.startswith("$(") else "a process substitution")
        self._inner_statements(node, text[:2] + " )")

    def _inner_statements(self, node: Node, context: str) -> None:
        for child in node.children:
            if child.is_named:
                self.statements(child, context)

    def _expansion(self, node: Node, context: str, kind: str) -> None:
        if kind in ("simple_expansion", "expansion"):
            self.found.add_complex("a variable expansion")
        elif kind == "arithmetic_expansion":
            self.found.add_complex("an arithmetic expansion")
            if self._mentions_variables(node):
                self.found.add_hidden("arithmetic that evaluates variables (their text may hold commands)")
        else:
            self.found.add_complex(f"{kind.replace('_', ' ')}")
        for child in node.children:
            if child.is_named:
                self._expansion_children(child, context)

    def _expansion_children(self, node: Node, context: str) -> None:
        if node.type in ("command_substitution", "process_substitution"):
            self._substitution(node, self._text(node))
            return
        for child in node.children:
            self._expansion_children(child, context)

    def _mentions_variables(self, node: Node) -> bool:
        if node.type in ("variable_name", "simple_expansion", "expansion", "word"):
            return True
        return any(self._mentions_variables(child) for child in node.children)

    def _unquoted(self, text: str, parts: list[str]) -> None:
        if "\n" in _CONTINUATION.sub("", text) or "\r" in text:
            self.found.add_hidden("a line break inside a word, which bash reads differently")
            parts.append(Hole(text))
            return
        if "{" in text and ("," in text or ".." in text) and "}" in text:
            self.found.add_complex("a brace expansion")
            parts.append(Hole(text))
            return
        if "$" in text.replace("\\$", "") and re.search(r"(?<!\\)\$[A-Za-z0-9_{(\[@*#?!$-]", text):
            self.found.add_hidden("an expansion the parser did not separate")
            parts.append(Hole(text))
            return
        if "`" in text.replace("\\`", ""):
            self.found.add_hidden("a backtick the parser did not separate")
            parts.append(Hole(text))
            return
        if any(ch in _GLOB for ch in _unescaped_specials(text)):
            self.found.add_complex("a glob pattern")
            self._pattern = True
        parts.append(_unescape_plain(text))

    def _text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")


# ---------------------------------------------------------------------------------- helpers


def _field_of(parent: Node, child: Node) -> str | None:
    for index, candidate in enumerate(parent.children):
        if candidate == child:
            return parent.field_name_for_child(index)
    return None


__all__ = ["Hole", "MAX_NESTING", "Redirect", "ShellAnalysis", "SimpleCommand", "Word", "analyse"]
