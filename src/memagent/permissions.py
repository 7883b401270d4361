"""Permission modes and allow / ask / deny rules: may this tool call run, must the user be
asked, or is it refused?

Modes:

- ``default``: tools that change things (``bash``, ``write_file``, ``edit_file``) ask first.
- ``acceptEdits``: file edits (``write_file``, ``edit_file``) run without asking; ``bash`` asks.
- ``plan``: only read-only tools run; anything that changes files, tasks, memory or the outside
  world is refused with a message telling the model it is in plan mode.
- ``bypassPermissions`` (``--yes``): nothing asks; deny rules still refuse.

Rules are strings ``Tool`` or ``Tool(pattern)``:

- ``Bash(npm test)``: exactly this command; ``Bash(git status:*)``: this command followed by
  anything (words are compared, so ``git statusx`` does not match); ``*`` elsewhere in the
  pattern is a wildcard (``Bash(git * --dry-run)``). A compound command (``a && b``, ``a | b``)
  is allowed by allow rules only when every part is; one with command substitution or
  redirection is never allowed by a rule (it asks). A deny or ask rule matches when any part
  matches.
- ``Read(.env)``, ``Write(src/**)``, ``Edit(docs/*.md)``: paths, gitignore-style. A pattern
  without a slash matches the name at any depth; ``src/**`` everything under ``src``; a pattern
  naming a folder covers what is inside; ``//abs/path`` is absolute, ``~/path`` under the home
  directory, anything else relative to the project root. ``Read`` covers ``read_file``, ``glob``
  and ``grep`` (by the folder searched); ``Edit`` covers ``write_file`` and ``edit_file``.
- ``mcp__server`` (every tool of an MCP server), ``mcp__server__tool`` (one tool).
- Any other tool by its own name (``memory_save``, ``task_create``).

Precedence: deny wins over ask, ask over allow; with no matching rule the mode decides.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Literal, Sequence

MODES = ("default", "acceptEdits", "plan", "bypassPermissions")
Action = Literal["allow", "ask", "deny"]

# memagent's tool names → the rule names users write (Claude Code's spelling).
RULE_NAMES = {
    "bash": "Bash",
    "write_file": "Write",
    "edit_file": "Edit",
    "read_file": "Read",
    "glob": "Read",
    "grep": "Read",
}
# Rule names that also cover other rule names (an Edit rule applies to Write).
_COVERS = {"Edit": ("Edit", "Write"), "Read": ("Read",), "Write": ("Write",)}
EDIT_TOOLS = frozenset({"write_file", "edit_file"})
# Tools that change nothing outside the conversation: the only ones plan mode runs.
READ_ONLY_TOOLS = frozenset(
    {"read_file", "glob", "grep", "memory_search", "memory_stats", "recall", "task_get", "task_list",
     "todo", "compact", "task", "bash_output"}  # task: a subagent's own calls go through the gate one by one
)
_PATH_TOOLS = frozenset({"Read", "Write", "Edit"})


class PermissionRuleError(ValueError):
    """A rule or mode that cannot be understood; ``str()`` is one line naming it."""


@dataclass(frozen=True)
class Rule:
    tool: str  # rule name: "Bash", "Read", "mcp__github", "memory_save"
    pattern: str | None = None
    text: str = ""

    def __str__(self) -> str:
        return self.text or (f"{self.tool}({self.pattern})" if self.pattern is not None else self.tool)


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str
    rule: Rule | None = None


_RULE = re.compile(r"^(?P<tool>[A-Za-z_][A-Za-z0-9_\-]*)(?:\((?P<pattern>.*)\))?$", re.DOTALL)


def parse_rule(text: str) -> Rule:
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
            raise PermissionRuleError(f"permission rule {text!r} has empty parentheses; write {tool} for the whole tool")
        if tool.startswith("mcp__"):
            raise PermissionRuleError(f"permission rule {text!r}: MCP rules take no pattern (mcp__server or mcp__server__tool)")
        if tool == "Bash" and ":*" in pattern[:-2]:
            raise PermissionRuleError(f"permission rule {text!r}: ':*' may only end a Bash pattern")
        if pattern == "*":
            pattern = None
    return Rule(tool, pattern, stripped)


def parse_rules(texts: Iterable[str], kind: str = "allow") -> tuple[Rule, ...]:
    rules = []
    for text in texts:
        try:
            rules.append(parse_rule(text))
        except PermissionRuleError as exc:
            raise PermissionRuleError(f"{kind}: {exc}") from None
    return tuple(rules)


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise PermissionRuleError(f"unknown permission mode {mode!r}; use one of: {', '.join(MODES)}")
    return mode


# ------------------------------------------------------------------ bash commands

_WRAPPERS = frozenset({"sudo", "env", "nohup", "command", "builtin", "exec", "time", "nice", "xargs", "doas", "timeout"})
_WRAPPER_ARGUMENT = re.compile(r"^(?:-.*|\d+(?:\.\d+)?[smhd]?)$")  # "-n", "5", "10s"
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_UNSAFE_FOR_ALLOW = re.compile(r"\$\(|`|<\(|>\(|[<>]|\$\{|\(|\)")


def _shell_tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: split crudely, matching stays conservative
        return re.findall(r"[;&|]+|[^\s;&|]+", text)


def command_parts(command: str) -> list[list[str]]:
    """The simple commands in ``command`` as word lists (``a && b | c`` → three)."""
    parts: list[list[str]] = [[]]
    for token in _shell_tokens(command.replace("\n", " ; ")):
        if token and all(ch in ";&|" for ch in token):
            parts.append([])
        else:
            parts[-1].append(token)
    return [p for p in parts if p]


def _deny_parts(command: str) -> list[list[str]]:
    """Every command that could run, for deny and ask rules: substitutions opened up, leading
    variable assignments and wrappers (``env``, ``sudo``, ``nohup`` …) dropped."""
    opened = re.sub(r"\$\(|`|<\(|>\(|[()]", " ; ", command)
    parts = []
    for words in command_parts(opened):
        while words and (_ASSIGNMENT.match(words[0]) or words[0] in _WRAPPERS or _WRAPPER_ARGUMENT.match(words[0])):
            words = words[1:]
        if words:
            parts.append(words)
            if "/" in words[0]:  # /bin/rm is rm
                parts.append([words[0].rsplit("/", 1)[1], *words[1:]])
    return parts + command_parts(command)


def _command_matches(pattern: str, words: list[str]) -> bool:
    if pattern.endswith(":*"):
        prefix = _shell_tokens(pattern[:-2])
        return words[: len(prefix)] == prefix
    if "*" in pattern:
        return fnmatch.fnmatchcase(" ".join(words), " ".join(_shell_tokens(pattern)))
    return words == _shell_tokens(pattern)


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


def _path_matches(pattern: str, path: Path, root: Path, home: Path) -> bool:
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


def _input_path(tool_name: str, tool_input: dict[str, Any], root: Path) -> Path | None:
    raw = tool_input.get("path")
    if raw is None and tool_name in ("glob", "grep"):
        raw = "."
    if not isinstance(raw, str):
        return None
    candidate = Path(os.path.expanduser(raw))
    if not candidate.is_absolute():
        candidate = root / candidate
    return Path(os.path.realpath(candidate))  # a symlink is judged by what it points to


# ------------------------------------------------------------------ the policy


@dataclass(frozen=True)
class PermissionPolicy:
    """Decides each tool call from the mode and the rules (pure: no I/O, no prompts)."""

    mode: str = "default"
    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    root: Path = field(default_factory=Path.cwd)
    home: Path = field(default_factory=Path.home)

    @classmethod
    def from_settings(
        cls,
        mode: str = "default",
        allow: Sequence[str] = (),
        ask: Sequence[str] = (),
        deny: Sequence[str] = (),
        *,
        root: Path,
        home: Path | None = None,
    ) -> "PermissionPolicy":
        """Parse rule strings; PermissionRuleError (one line) for a bad mode or rule."""
        return cls(
            mode=check_mode(mode),
            allow=parse_rules(allow, "allow"),
            ask=parse_rules(ask, "ask"),
            deny=parse_rules(deny, "deny"),
            root=Path(root).resolve(),
            home=home or Path.home(),
        )

    def with_mode(self, mode: str) -> "PermissionPolicy":
        return PermissionPolicy(check_mode(mode), self.allow, self.ask, self.deny, self.root, self.home)

    def with_allow(self, rules: Iterable[str]) -> "PermissionPolicy":
        return PermissionPolicy(self.mode, self.allow + parse_rules(rules), self.ask, self.deny, self.root, self.home)

    def decide(self, tool_name: str, tool_input: dict[str, Any], *, approval_required: bool = True) -> Decision:
        """allow, ask or deny this call, with the reason and the rule that decided it.

        ``approval_required`` is the tool's own view (``bash`` asks for ordinary commands);
        it matters only when no rule and no mode decides.
        """
        rule = self._first_match(self.deny, tool_name, tool_input)
        if rule is not None:
            return Decision("deny", f"{tool_name} is denied by the permission rule {rule}", rule)
        if self.mode == "plan" and tool_name not in READ_ONLY_TOOLS:
            return Decision(
                "deny",
                f"{tool_name} changes things and this session is in plan mode, where only read-only tools "
                "run; finish the plan and present it to the user instead",
            )
        rule = self._first_match(self.ask, tool_name, tool_input)
        if rule is not None and self.mode != "bypassPermissions":
            return Decision("ask", f"the permission rule {rule} asks for {tool_name}", rule)
        rule = self._allowed_by(tool_name, tool_input)
        if rule is not None:
            return Decision("allow", f"allowed by the permission rule {rule}", rule)
        if self.mode == "bypassPermissions":
            return Decision("allow", "bypassPermissions mode")
        if self.mode == "acceptEdits" and tool_name in EDIT_TOOLS:
            return Decision("allow", "acceptEdits mode approves file edits")
        if not approval_required:
            return Decision("allow", f"{tool_name} needs no approval")
        return Decision("ask", f"{tool_name} needs the user's approval")

    def describe(self) -> list[str]:
        """Mode and rules as lines, for ``/permissions``."""
        lines = [f"mode: {self.mode}"]
        for kind, rules in (("deny", self.deny), ("ask", self.ask), ("allow", self.allow)):
            lines.append(f"{kind}: " + (", ".join(str(r) for r in rules) if rules else "(none)"))
        return lines

    # -------------------------------------------------------------- matching

    def _first_match(self, rules: tuple[Rule, ...], tool_name: str, tool_input: dict[str, Any]) -> Rule | None:
        for rule in rules:
            if self._matches(rule, tool_name, tool_input):
                return rule
        return None

    def _allowed_by(self, tool_name: str, tool_input: dict[str, Any]) -> Rule | None:
        """The allow rule that covers this call; for a compound command every part must be
        covered (by one rule or several), and the rule for the last part is named."""
        if RULE_NAMES.get(tool_name) != "Bash":
            return self._first_match(self.allow, tool_name, tool_input)
        command = str(tool_input.get("command", ""))
        bash_rules = [r for r in self.allow if r.tool == "Bash"]
        whole = next((r for r in bash_rules if r.pattern is None), None)
        if whole is not None:
            return whole
        flat = " ".join(command.split())
        exact = next((r for r in bash_rules if r.pattern is not None and " ".join(r.pattern.split()) == flat), None)
        if exact is not None:
            return exact
        if _UNSAFE_FOR_ALLOW.search(command):
            return None
        found: Rule | None = None
        for words in command_parts(command) or [[]]:
            found = next((r for r in bash_rules if r.pattern and _command_matches(r.pattern, words)), None)
            if found is None:
                return None
        return found

    def _matches(self, rule: Rule, tool_name: str, tool_input: dict[str, Any]) -> bool:
        if tool_name.startswith("mcp__"):
            return tool_name == rule.tool or tool_name.startswith(rule.tool + "__")
        rule_name = RULE_NAMES.get(tool_name, tool_name)
        if rule_name not in _COVERS.get(rule.tool, (rule.tool,)):
            return False
        if rule.pattern is None:
            return True
        if rule_name == "Bash":
            command = str(tool_input.get("command", ""))
            return any(_command_matches(rule.pattern, words) for words in _deny_parts(command))
        if rule.tool in _PATH_TOOLS:
            path = _input_path(tool_name, tool_input, self.root)
            return path is not None and _path_matches(rule.pattern, path, self.root, self.home)
        return False  # a pattern on a tool that takes none matches nothing


def suggested_rule(tool_name: str, tool_input: dict[str, Any]) -> str:
    """The rule an "always" answer saves: this exact command, this file, or the tool."""
    rule_name = RULE_NAMES.get(tool_name, tool_name)
    if rule_name == "Bash":
        command = " ".join(str(tool_input.get("command", "")).split())
        return f"Bash({command})" if command else "Bash(true)"
    if rule_name in ("Write", "Edit"):
        path = str(tool_input.get("path", ""))
        if path and not any(ch in path for ch in "*?[()"):
            return f"Edit({path})"
    return rule_name


@dataclass
class SessionPermissions:
    """One session's permissions: the policy, widened by each "always" answer, which is also
    saved as a rule for the project (``save``). What the agent loop consults."""

    policy: PermissionPolicy
    save: Callable[[str], None] | None = None

    @property
    def mode(self) -> str:
        return self.policy.mode

    def decide(self, tool_name: str, tool_input: dict[str, Any], *, approval_required: bool = True) -> Decision:
        return self.policy.decide(tool_name, tool_input, approval_required=approval_required)

    def always(self, tool_name: str, tool_input: dict[str, Any]) -> str:
        """The user answered "always": allow this call from now on; returns the rule added."""
        rule = suggested_rule(tool_name, tool_input)
        self.policy = self.policy.with_allow([rule])
        if self.save is not None:
            self.save(rule)
        return rule

    def describe(self) -> list[str]:
        return self.policy.describe()


def project_permissions(
    home: Path,
    root: Path,
    *,
    mode: str,
    allow: Iterable[str] = (),
    ask: Iterable[str] = (),
    deny: Iterable[str] = (),
    warn: Callable[[str], None],
) -> SessionPermissions:
    """A session's permissions: the settings' rules plus the rules saved for this project
    (``$MEMAGENT_HOME/projects.json``); "always" answers are saved there too, and a store that
    cannot be written is a warning. Raises PermissionRuleError (one line) for a bad rule."""
    from memagent.trust import TrustError, save_rule, saved_rules

    policy = PermissionPolicy.from_settings(mode, [*allow, *saved_rules(home, root)], list(ask), list(deny), root=root)

    def save(rule: str) -> None:
        try:
            save_rule(home, root, rule)
        except TrustError as exc:
            warn(f"the rule {rule} was not saved: {exc}")

    return SessionPermissions(policy, save)


__all__ = [
    "Decision",
    "MODES",
    "PermissionPolicy",
    "PermissionRuleError",
    "READ_ONLY_TOOLS",
    "Rule",
    "SessionPermissions",
    "check_mode",
    "parse_rule",
    "parse_rules",
    "project_permissions",
    "suggested_rule",
]
