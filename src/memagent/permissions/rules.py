"""Permission rules: ``Tool`` or ``Tool(pattern)`` strings, what each covers, and where it came from.

- ``Bash(npm test)``: exactly this command; ``Bash(git status:*)``: this command followed by
  anything (words are compared: ``git statusx`` does not match); ``*`` elsewhere is a wildcard
  (``Bash(git * --dry-run)``). ``Bash`` rules apply to every call that declares a shell command.
- ``Read(.env)``, ``Edit(src/**)``, ``Write(docs/*.md)``: gitignore-style paths. A pattern
  without a slash matches the name at any depth; ``src/**`` everything under ``src``; a pattern
  naming a folder covers what is inside; ``//abs/path`` is absolute, ``~/path`` under the home
  directory, anything else relative to the project root. ``Read`` covers calls that declare
  reading a path, ``Edit`` and ``Write`` calls that declare writing one.
- ``mcp__server`` (every tool of an MCP server), ``mcp__server__tool`` (one tool).
- Every other tool by its own name (``memory_save``, ``task_create``).

How a shell command meets a rule is in :func:`bash_rule_hits` (deny and ask: any simple command
bash could run, and anything hidden) and :func:`bash_allowed_by` (allow: every simple command).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memagent.permissions.shell import ShellAnalysis, SimpleCommand

PATH_RULES = ("Read", "Edit", "Write")


class PermissionRuleError(ValueError):
    """A rule or mode that cannot be understood; ``str()`` is one line naming it."""


@dataclass(frozen=True)
class Rule:
    tool: str  # rule name: "Bash", "Read", "mcp__github", "memory_save"
    pattern: str | None = None
    text: str = ""
    origin: str = ""  # where it was written: a settings file, "saved for this project" …

    def __str__(self) -> str:
        return self.text or (f"{self.tool}({self.pattern})" if self.pattern is not None else self.tool)

    @property
    def exact_command(self) -> bool:
        """A ``Bash`` rule naming one whole command (no ``:*``, no ``*``)."""
        return self.tool == "Bash" and self.pattern is not None and "*" not in self.pattern

    def named(self) -> str:
        """``Bash(git push:*) (from /home/me/.memagent/config.toml)``."""
        return f"{self} (from {self.origin})" if self.origin else str(self)


_RULE = re.compile(r"^(?P<tool>[A-Za-z_][A-Za-z0-9_\-]*)(?:\((?P<pattern>.*)\))?$", re.DOTALL)


def parse_rule(text: str, origin: str = "") -> Rule:
    """``"Bash(git status:*)"`` → ``Rule("Bash", "git status:*")``; PermissionRuleError if malformed."""
    if not isinstance(text, str):
        raise PermissionRuleError(f"permission rule {text!r} is not a string")
    stripped = text.strip()
    match = _RULE.match(stripped)
    if not match:
        raise PermissionRuleError(
            f"permission rule {text!r} is not Tool or Tool(pattern), e.g. Bash(npm test) or Read(.env)"
        )
    tool, pattern = match.group("tool"), match.group("pattern")
    if pattern is not None:
        pattern = pattern.strip()
        if not pattern:
            raise PermissionRuleError(
                f"permission rule {text!r} has empty parentheses; write {tool} for the whole tool"
            )
        if tool.startswith("mcp__"):
            raise PermissionRuleError(
                f"permission rule {text!r}: MCP rules take no pattern (mcp__server or mcp__server__tool)"
            )
        if tool == "Bash" and ":*" in pattern[:-2]:
            raise PermissionRuleError(f"permission rule {text!r}: ':*' may only end a Bash pattern")
        if pattern == "*":
            pattern = None
    return Rule(tool, pattern, stripped, origin)


def parse_rules(texts: Iterable[str], kind: str = "allow", origin: str = "") -> tuple[Rule, ...]:
    rules = []
    for text in texts:
        try:
            rules.append(parse_rule(text, origin))
        except PermissionRuleError as exc:
            raise PermissionRuleError(f"{kind}: {exc}") from None
    return tuple(rules)


# ------------------------------------------------------------------ shell commands


def _pattern_words(pattern: str) -> list[str]:
    try:
        return shlex.split(pattern)
    except ValueError:  # an unbalanced quote: plain words
        return pattern.split()


def command_matches(pattern: str, argv: Sequence[str]) -> bool:
    """Does a ``Bash`` pattern cover this literal command (its words as bash passes them)?"""
    words = list(argv)
    if pattern.endswith(":*"):
        prefix = _pattern_words(pattern[:-2])
        return words[: len(prefix)] == prefix
    if "*" in pattern:
        return fnmatch.fnmatchcase(" ".join(words), " ".join(_pattern_words(pattern)))
    return words == _pattern_words(pattern)


def _could_match(pattern: str, command: SimpleCommand) -> bool:
    """Could the pattern cover this command for some value of what bash decides at run time?

    Conservative (for deny and ask rules): the words known before the first unknown part must
    agree with the pattern's words up to its first wildcard."""
    argv = command.argv
    if argv is not None:
        return command_matches(pattern, argv) or (
            "/" in argv[0] and command_matches(pattern, [os.path.basename(argv[0]), *argv[1:]])
        )
    known: list[str] = []
    partial = False
    for word in command.words:
        literal = word.literal
        if literal is None:
            known.append(word.known_prefix)
            partial = True
            break
        known.append(literal)
    wanted = _pattern_words(pattern[:-2] if pattern.endswith(":*") else pattern)
    cut = next((i for i, w in enumerate(wanted) if "*" in w), None)
    if cut is not None:
        wanted = wanted[:cut] + [wanted[cut].split("*", 1)[0]]
    for candidate in (known, [os.path.basename(known[0]), *known[1:]] if known else known):
        if _prefixes_agree(candidate, wanted, partial, cut is not None):
            return True
    return False


def _prefixes_agree(known: list[str], wanted: list[str], partial: bool, wanted_partial: bool) -> bool:
    for index in range(min(len(known), len(wanted))):
        have, want = known[index], wanted[index]
        last_known = partial and index == len(known) - 1
        last_wanted = wanted_partial and index == len(wanted) - 1
        if last_known or last_wanted:
            if not (have.startswith(want) or want.startswith(have)):
                return False
        elif have != want:
            return False
    return True


def bash_rule_hits(rule: Rule, command: str, analysis: ShellAnalysis) -> bool:
    """A deny or ask rule hits when it could cover any simple command bash may run — or when
    part of the command is hidden (then any rule could)."""
    if rule.pattern is None or analysis.hidden:
        return True
    if rule.exact_command and command.strip() == rule.pattern.strip():
        return True
    return any(_could_match(rule.pattern, simple) for simple in analysis.commands)


def bash_allowed_by(rules: Sequence[Rule], command: str, analysis: ShellAnalysis) -> Rule | None:
    """The allow rule that approves this command: ``Bash`` for every command, an exact rule with
    exactly this text, or — for a plain command only — rules covering each of its simple commands
    (the rule for the last one is returned)."""
    bash_rules = [r for r in rules if r.tool == "Bash"]
    whole = next((r for r in bash_rules if r.pattern is None), None)
    if whole is not None:
        return whole
    exact = next((r for r in bash_rules if r.exact_command and r.pattern == command.strip()), None)
    if exact is not None:
        return exact
    if not analysis.plain or not analysis.commands:
        return None
    found: Rule | None = None
    for simple in analysis.commands:
        argv = simple.argv
        if argv is None:
            return None
        found = next((r for r in bash_rules if r.pattern and command_matches(r.pattern, argv)), None)
        if found is None:
            return None
    return found


# ------------------------------------------------------------------ paths


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """gitignore-style: ``**`` any folders, ``*`` and ``?`` within one name."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def path_matches(pattern: str, path: Path, root: Path, home: Path) -> bool:
    """Does the rule's path pattern cover ``path`` (absolute, resolved)?"""
    pattern = pattern.rstrip("/") or "/"
    if pattern.startswith("//"):
        base, rest = Path("/"), pattern[2:]
    elif pattern.startswith("~/"):
        base, rest = home, pattern[2:]
    else:
        base, rest = root, pattern.lstrip("/").removeprefix("./")
    anywhere = "/" not in pattern
    try:
        relative = path.relative_to(base).as_posix()
    except ValueError:
        return False
    regex = _glob_regex(rest)
    candidates = relative.split("/")
    # the path itself or any folder above it (a rule naming a folder covers its contents)
    for end in range(len(candidates), 0, -1):
        prefix = "/".join(candidates[:end])
        if regex.fullmatch(prefix) or (anywhere and regex.fullmatch(candidates[end - 1])):
            return True
    return False


def resolve(raw: str, root: Path) -> Path:
    """A path as a call gives it, made absolute against the root; a symlink is judged by its target."""
    candidate = Path(os.path.expanduser(raw))
    if not candidate.is_absolute():
        candidate = root / candidate
    return Path(os.path.realpath(candidate))


__all__ = [
    "PATH_RULES",
    "PermissionRuleError",
    "Rule",
    "bash_allowed_by",
    "bash_rule_hits",
    "command_matches",
    "parse_rule",
    "parse_rules",
    "path_matches",
    "resolve",
]
