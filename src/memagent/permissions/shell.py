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
import os
import re
from dataclasses import dataclass, field
from typing import Any

MAX_NESTING = 3
WRAPPERS = frozenset(
    {"env", "sudo", "doas", "nohup", "nice", "ionice", "timeout", "time", "stdbuf", "command", "builtin", "exec",
     "setsid", "coproc", "xargs", "chrt", "taskset", "unbuffer", "run0", "pkexec"}
)
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "ash", "busybox"})
INTERPRETERS = frozenset(
    {"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "tclsh", "Rscript", "pwsh",
     "osascript", "deno", "bun", "irb"}
)
# Builtins and programs whose string argument is run as commands (by the shell, or by ``sh -c``).
CODE_BUILTINS = frozenset({"eval", "trap", "watch"})
COMMAND_STRINGS = {"su": "-c", "runuser": "-c", "script": "-c", "flock": "-c"}
# Builtins that read or change the shell itself: never approved by an allow rule.
SHELL_BUILTINS = frozenset(
    {"source", ".", "alias", "unalias", "bind", "complete", "compgen", "enable", "fc", "hash", "history", "mapfile",
     "readarray", "set", "shopt", "declare", "typeset", "local", "export", "readonly", "let", "unset", "read",
     "printf", "test", "[", "[[", "getopts", "shift", "wait", "disown", "ulimit", "umask", "cd", "pushd", "popd"}
)
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_WRAPPER_VALUE = re.compile(r"^(?:-.*|\d+(?:\.\d+)?[smhd]?|[A-Za-z_][A-Za-z0-9_]*=.*)$")
_CODE_IN_TEXT = re.compile(r"\$[({\[]|`")
_HARMLESS_TARGETS = frozenset({"/dev/null"})
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_CONTINUATION = re.compile(r"\\\r?\n")
_ARITHMETIC_TEST = re.compile(r"(?:^|\s)-(?:eq|ne|lt|le|gt|ge)(?:\s|$)")
_GLOB = frozenset("*?[")
_EXPANSIONS = frozenset(
    {"simple_expansion", "expansion", "arithmetic_expansion", "ansi_c_string", "translated_string", "brace_expression"}
)


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


@dataclass
class _Findings:
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


@functools.lru_cache(maxsize=1)
def _parser() -> Any:
    from tree_sitter import Language, Parser
    import tree_sitter_bash

    return Parser(Language(tree_sitter_bash.language()))


@functools.lru_cache(maxsize=256)
def analyse(command: str) -> ShellAnalysis:
    """Every simple command bash could run for ``command``, and why it is complex or hidden."""
    found = _Findings()
    _analyse_into(command, found, context="", depth=0)
    return ShellAnalysis(command, tuple(found.commands), tuple(found.redirects), tuple(found.complex),
                         tuple(found.hidden))


def _analyse_into(command: str, found: _Findings, *, context: str, depth: int) -> None:
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


class _Walker:
    """One pass over a tree: statements, then the commands inside them."""

    def __init__(self, source: bytes, found: _Findings, depth: int) -> None:
        self.source = source
        self.found = found
        self.depth = depth
        self._pattern = False

    # ------------------------------------------------------------------ statements

    def statements(self, node: Any, context: str) -> None:
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

    def _children(self, node: Any, context: str) -> None:
        for child in node.children:
            if child.is_named:
                self.statements(child, context)
            elif child.type == "&":
                self.found.add_complex("a background job (&)")
            elif child.type not in (";", "&&", "||", "\n", ";;", "|", "|&", "(", ")", "{", "}"):
                self.found.add_complex(f"the shell keyword {child.type}")

    def _pipeline(self, node: Any, context: str) -> None:
        for child in node.children:
            if child.is_named:
                self.statements(child, context)
            elif child.type not in ("|", "|&"):
                self.found.add_complex(f"the shell keyword {child.type}")

    def _comment(self, node: Any) -> None:
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
        {"do_group", "elif_clause", "else_clause", "case_item", "compound_statement", "subshell", "negated_command",
         "function_definition", "if_statement", "while_statement", "for_statement", "c_style_for_statement",
         "case_statement"}
    )

    def _compound(self, node: Any, context: str) -> None:
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

    def _test(self, node: Any) -> None:
        text = self._text(node)
        if ("$" in text or "`" in text) and _ARITHMETIC_TEST.search(text):
            self.found.add_hidden("a [[ ]] comparison that evaluates variables as arithmetic")

    def _redirected(self, node: Any, context: str) -> None:
        body = node.child_by_field_name("body")
        for child in node.children:
            if child == body or child.type in self._STATEMENT_TYPES or child.type in self._COMPOUND:
                self.statements(child, context)
            elif child.is_named:
                self.redirect(child, context)

    # ------------------------------------------------------------------ redirections

    def redirect(self, node: Any, context: str) -> None:
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
        harmless = target is not None and (target.literal in _HARMLESS_TARGETS or (
            "&" in operator and target.literal is not None and (target.literal.isdigit() or target.literal == "-")))
        if not harmless:
            self.found.add_complex("a redirection to a file")

    def _heredoc(self, node: Any, context: str) -> None:
        self.found.add_complex("a here-document (<<)")
        for child in node.children:
            if child.type == "heredoc_body":
                for inner in child.children:
                    if inner.is_named and inner.type != "heredoc_content":
                        self.word(inner, context)

    # ------------------------------------------------------------------ commands

    def _command(self, node: Any, context: str) -> None:
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

    def _compound_value(self, node: Any, context: str) -> None:
        for child in node.children:
            if child.is_named and child.type != "variable_name":
                self.word(child, context)

    def _separated(self, end: int, start: int) -> bool:
        gap = _CONTINUATION.sub("", self.source[end:start].decode("utf-8", "replace"))
        return any(ch in " \t\n" for ch in gap)

    def record(self, command: SimpleCommand) -> None:
        """A simple command bash runs, then what it runs in turn (wrappers, shells, eval)."""
        self.found.commands.append(command)
        first = command.words[0]
        if first.literal is None:
            self.found.add_hidden(f"the command name {first.source} is decided when it runs")
            return
        name = os.path.basename(first.literal)
        if first.pattern:
            self.found.add_hidden(f"the command name {first.source} is a pattern bash expands")
            return
        self._runs_more(name, command)

    def _runs_more(self, name: str, command: SimpleCommand) -> None:
        args = list(command.words[1:])
        if name in WRAPPERS:
            self._wrapper(name, args, command)
        elif name == "find" and any(w.literal in FIND_EXEC for w in args):
            self.found.add_complex("find -exec runs a command")
            self._find_exec(args, command)
        elif name in SHELLS:
            self._shell(name, args, command)
        elif name in INTERPRETERS or re.fullmatch(r"python3?(\.\d+)?", name):
            literals = [w.literal for w in args]
            if "-" in literals or not any(w is None or not w.startswith("-") for w in literals):
                self.found.add_hidden(f"{name} reads the program to run from its input")
        elif name in CODE_BUILTINS or name in COMMAND_STRINGS:
            self._command_string(name, args, command)
        elif name in SHELL_BUILTINS:
            self.found.add_complex(f"the shell builtin {name}")
            self._evaluated_names(args, command)

    def _command_string(self, name: str, args: list[Word], command: SimpleCommand) -> None:
        """``eval``, ``trap 'cmd' SIG``, ``watch 'cmd'``, ``su -c 'cmd'``: a string run as commands."""
        self.found.add_complex(f"{name} runs a string as commands")
        option = COMMAND_STRINGS.get(name)
        if option:
            flags = [w.literal for w in args]
            if option not in flags:
                return
            code = args[flags.index(option) + 1 : flags.index(option) + 2]
        elif name == "trap":
            code = args[:1]
        elif name == "watch":
            for start in _inner_starts(args):
                self._code(" ".join(w.shown for w in args[start:]), all(w.literal is not None for w in args[start:]),
                           name, command)
            return
        else:
            code = args
        self._code(" ".join(w.shown for w in code), all(w.literal is not None for w in code), name, command)

    def _evaluated_names(self, args: list[Word], command: SimpleCommand) -> None:
        """Builtins that take variable names (``printf -v``, ``test -v``, ``read``, ``declare`` …)
        evaluate an array subscript in them, and ``$( )`` there runs: ``printf -v 'a[$(cmd)]'``."""
        for word in args:
            literal = word.literal
            if literal is not None and _CODE_IN_TEXT.search(literal):
                self.found.add_complex("a word that holds shell code")
                self.found.add_hidden(f"{command.shown[0]} may evaluate the shell code in {literal!r}")
                self._code(literal, True, "an evaluated name", command, quiet=True)

    def _wrapper(self, name: str, args: list[Word], command: SimpleCommand) -> None:
        if name in ("exec", "command", "builtin", "coproc"):
            self.found.add_complex(f"the shell builtin {name}")
        if name == "xargs":
            self.found.add_complex("xargs runs a command with arguments it reads")
        options = [w.literal for w in args[:2]]
        if name == "command" and any(o in ("-v", "-V") for o in options if o):
            return  # looks a command up, runs nothing
        if name == "env" and any(w.literal and (w.literal.startswith("-S") or w.literal.startswith("--split-string"))
                                 for w in args):
            self.found.add_hidden("env -S splits a string into a command")
        starts = _inner_starts(args)
        if not starts and args:
            self.found.add_hidden(f"the command {name} runs is decided when it runs")
        for start in starts:
            inner = SimpleCommand(tuple(args[start:]), f"after {name}", open_tail=name == "xargs" or command.open_tail)
            self.record(inner)

    def _find_exec(self, args: list[Word], command: SimpleCommand) -> None:
        index = 0
        while index < len(args):
            if args[index].literal in FIND_EXEC:
                end = index + 1
                while end < len(args) and args[end].literal not in (";", "+"):
                    end += 1
                if end > index + 1:
                    self.record(SimpleCommand(tuple(args[index + 1 : end]), "find -exec", open_tail=True))
                index = end
            index += 1

    def _shell(self, name: str, args: list[Word], command: SimpleCommand) -> None:
        """``bash -c SCRIPT``: the script is read too; ``bash`` with no script reads its input."""
        for index, word in enumerate(args):
            flag = word.literal
            if flag is None:
                self.found.add_hidden(f"{name} is started with arguments decided when it runs")
                return
            if flag.startswith("-") and not flag.startswith("--") and "c" in flag[1:]:
                script = args[index + 1] if index + 1 < len(args) else None
                self.found.add_complex(f"{name} -c runs a script string")
                if script is None:
                    self.found.add_hidden(f"{name} -c without a script")
                else:
                    self._code(script.shown, script.literal is not None, f"{name} -c", command)
                return
            if flag in ("-s", "-"):
                break
            if not flag.startswith("-") or flag == "--":
                if flag == "--" and index + 1 >= len(args):
                    break
                return  # runs a script file, as any program does
        self.found.add_hidden(f"{name} reads the commands to run from its input")

    def _code(self, text: str, known: bool, context: str, command: SimpleCommand, *, quiet: bool = False) -> None:
        if not known:
            self.found.add_hidden(f"{context} runs a string decided when it runs")
            return
        nested = _Findings()
        _analyse_into(text, nested, context=context, depth=self.depth + 1)
        self.found.commands.extend(nested.commands)
        self.found.redirects.extend(nested.redirects)
        for why in nested.complex:
            self.found.add_complex(why)
        if not quiet:
            for why in nested.hidden:
                self.found.add_hidden(why)
        elif nested.commands:
            self.found.add_hidden("a word holds shell code that may run")

    # ------------------------------------------------------------------ words

    def word(self, node: Any, context: str) -> Word:
        """The node as a word; commands inside it (``$( )``) are walked as they run too."""
        parts: list[str] = []
        self._pattern = False
        self._parts(node, context, parts, quoted=False)
        return Word(tuple(parts), self._text(node), self._pattern)

    def _parts(self, node: Any, context: str, parts: list[str], *, quoted: bool) -> None:
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

    def _string(self, node: Any, context: str, parts: list[str]) -> None:
        children = node.children
        for index, child in enumerate(children):
            if child.type == "string_content":
                parts.append(_unescape_double(self._text(child)))
            elif child.is_named:
                self._parts(child, context, parts, quoted=True)
            elif not (child.type == '"' and index in (0, len(children) - 1)):
                parts.append(Hole(self._text(child)))
                self.found.add_hidden(f"bash syntax the gate does not read ({child.type!r} in a string)")

    def _substitution(self, node: Any, text: str) -> None:
        if text.startswith("`"):
            # tree-sitter's grammar misreads backticks (two in a row, escaped ones inside): what
            # they run is not trusted to the parse; $( ) says the same and is read exactly
            self.found.add_complex("a backtick substitution")
            self.found.add_hidden("a backtick substitution (write $( ) instead)")
            self._inner_statements(node, "` `")
            return
        self.found.add_complex("a command substitution" if text.startswith("$(") else "a process substitution")
        self._inner_statements(node, text[:2] + " )")

    def _inner_statements(self, node: Any, context: str) -> None:
        for child in node.children:
            if child.is_named:
                self.statements(child, context)

    def _expansion(self, node: Any, context: str, kind: str) -> None:
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

    def _expansion_children(self, node: Any, context: str) -> None:
        if node.type in ("command_substitution", "process_substitution"):
            self._substitution(node, self._text(node))
            return
        for child in node.children:
            self._expansion_children(child, context)

    def _mentions_variables(self, node: Any) -> bool:
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

    def _text(self, node: Any) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")


# ---------------------------------------------------------------------------------- helpers


def _field_of(parent: Any, child: Any) -> str | None:
    for index, candidate in enumerate(parent.children):
        if candidate == child:
            return parent.field_name_for_child(index)
    return None


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


def _inner_starts(args: list[Word]) -> list[int]:
    """Where the command a wrapper runs may start: after its options, option values, numbers
    (``timeout 5``) and assignments (``env A=1``). An option may take the next word as its value
    or not (``sudo -u root rm``), so both readings are returned: a deny rule sees either."""
    starts: list[int] = []
    index = 0
    while index < len(args):
        literal = args[index].literal
        if literal == "--":
            index += 1
            continue
        if literal is None or not _WRAPPER_VALUE.match(literal):
            starts.append(index)
            break
        following = args[index + 1] if index + 1 < len(args) else None
        takes_value = literal.startswith("-") and "=" not in literal and following is not None
        if takes_value and (following.literal is None or not _WRAPPER_VALUE.match(following.literal)):
            starts.append(index + 1)  # read as the command …
            index += 2  # … and as the option's value
            continue
        index += 1
    return starts


__all__ = ["Hole", "MAX_NESTING", "Redirect", "ShellAnalysis", "SimpleCommand", "Word", "analyse"]
