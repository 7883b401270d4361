"""What a simple command runs in turn: the command after a wrapper (``env``, ``sudo``, ``timeout
5``, ``xargs`` …), after ``find -exec``, inside ``bash -c '…'``, ``eval``, ``trap``, ``watch``,
``su -c`` — and when a shell or interpreter reads what to run from its input, or a builtin may
evaluate shell code hidden in a variable name (``printf -v 'a[$(cmd)]'``).

A mixin of the walk in :mod:`.shell`: it records commands and findings there, and asks it to
read nested shell code (``nested``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from memagent.permissions.words import Findings, SimpleCommand, Word

WRAPPERS = frozenset(
    {
        "env",
        "sudo",
        "doas",
        "nohup",
        "nice",
        "ionice",
        "timeout",
        "time",
        "stdbuf",
        "command",
        "builtin",
        "exec",
        "setsid",
        "coproc",
        "xargs",
        "chrt",
        "taskset",
        "unbuffer",
        "run0",
        "pkexec",
    }
)
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "ash", "busybox"})
INTERPRETERS = frozenset(
    {
        "python",
        "python2",
        "python3",
        "perl",
        "ruby",
        "node",
        "nodejs",
        "php",
        "lua",
        "tclsh",
        "Rscript",
        "pwsh",
        "osascript",
        "deno",
        "bun",
        "irb",
    }
)
# Builtins and programs whose string argument is run as commands (by the shell, or by ``sh -c``).
CODE_BUILTINS = frozenset({"eval", "trap", "watch"})
COMMAND_STRINGS = {"su": "-c", "runuser": "-c", "script": "-c", "flock": "-c"}
# Builtins that read or change the shell itself: never approved by an allow rule.
SHELL_BUILTINS = frozenset(
    {
        "source",
        ".",
        "alias",
        "unalias",
        "bind",
        "complete",
        "compgen",
        "enable",
        "fc",
        "hash",
        "history",
        "mapfile",
        "readarray",
        "set",
        "shopt",
        "declare",
        "typeset",
        "local",
        "export",
        "readonly",
        "let",
        "unset",
        "read",
        "printf",
        "test",
        "[",
        "[[",
        "getopts",
        "shift",
        "wait",
        "disown",
        "ulimit",
        "umask",
        "cd",
        "pushd",
        "popd",
    }
)
# Builtins that can change what a later command name runs (``alias x=rm``, ``hash -p /bin/rm x``,
# ``enable -f lib.so x``, ``shopt -s expand_aliases``): whatever runs after them is hidden.
NAME_REDEFINERS = frozenset({"alias", "hash", "enable", "shopt"})
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_WRAPPER_VALUE = re.compile(r"^(?:-.*|\d+(?:\.\d+)?[smhd]?|[A-Za-z_][A-Za-z0-9_]*=.*)$")
_CODE_IN_TEXT = re.compile(r"\$[({\[]|`")


class CommandRuns:
    """Mixin of the walk, which provides ``found`` (the findings so far), ``depth`` (how deep in
    nested shell code) and ``nested(text, context)`` (reads nested shell code one level deeper)."""

    found: Findings
    depth: int
    nested: Callable[[str, str], Findings]

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
            if name in NAME_REDEFINERS and _redefines_names(name, args):
                self.found.add_hidden(f"{name} may change what a later command name runs")
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
                self._code(
                    " ".join(w.shown for w in args[start:]),
                    all(w.literal is not None for w in args[start:]),
                    name,
                    command,
                )
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
        if name == "env" and any(
            w.literal and (w.literal.startswith("-S") or w.literal.startswith("--split-string")) for w in args
        ):
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
        nested = self.nested(text, context)
        self.found.commands.extend(nested.commands)
        self.found.redirects.extend(nested.redirects)
        for why in nested.complex:
            self.found.add_complex(why)
        if not quiet:
            for why in nested.hidden:
                self.found.add_hidden(why)
        elif nested.commands:
            self.found.add_hidden("a word holds shell code that may run")


def _redefines_names(name: str, args: list[Word]) -> bool:
    """Whether ``name args`` may change what a later command name runs; listing (``alias``,
    ``hash`` alone, ``hash -r``, ``shopt -p``) does not."""
    literals = [w.literal for w in args]
    if any(word is None for word in literals):
        return True
    if name == "alias":
        return any("=" in word for word in literals if word)
    if name == "hash":
        return "-p" in literals or any(word and word.startswith("-") and "p" in word[1:] for word in literals)
    if name == "enable":
        return any(word and word.startswith("-") and "f" in word[1:] for word in literals) or bool(literals)
    return "expand_aliases" in literals and "-s" in literals


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
        takes_value = following is not None and literal.startswith("-") and "=" not in literal
        if (
            following is not None
            and takes_value
            and (following.literal is None or not _WRAPPER_VALUE.match(following.literal))
        ):
            starts.append(index + 1)  # read as the command …
            index += 2  # … and as the option's value
            continue
        index += 1
    return starts


__all__ = [
    "CODE_BUILTINS",
    "COMMAND_STRINGS",
    "CommandRuns",
    "FIND_EXEC",
    "INTERPRETERS",
    "SHELLS",
    "SHELL_BUILTINS",
    "WRAPPERS",
]
