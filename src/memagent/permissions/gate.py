"""The gate: one place that decides whether a call runs, must be asked about, or is refused.

Every action the model or a project file can cause reaches :meth:`Gate.decide` with what the
tool declares it would do (:mod:`.effects`): built-in tools, memory and task tools, MCP tools,
custom commands' ``!`` lines (:meth:`Gate.decide_command`) — and a ``PreToolUse`` hook's own
decision, when one gave it. The answer is allow, ask (with the reason shown to the user) or deny
(with the reason shown to the model). In order:

1. the dangerous-command guard (``rm -rf /``, ``sudo`` …) refuses, in every mode;
2. a deny rule that could cover the call refuses (for a shell command: any simple command bash
   could run, or anything hidden from the parse);
3. a hook that refuses, refuses;
4. plan mode refuses everything that is not read-only;
5. an ask rule asks (not in ``bypassPermissions``), and so does a hook that says ask;
6. a write to a protected path (:mod:`memagent.protected`) asks in every mode, unless an allow
   rule names that path;
7. an allow rule approves (a shell command only when it is plain, see :mod:`.shell`), and so
   does a hook that says allow;
8. the mode decides by the declared effects: ``default`` runs reads, session and task changes
   and project-scope memory saves; ``acceptEdits`` adds writes inside the project;
   ``bypassPermissions`` runs everything; everything else asks.

Pure: no I/O but resolving paths, no prompts. The loop asks the user; "always" comes back here
(:meth:`Gate.always`) and approves exactly that call from then on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from memagent.permissions.effects import (
    ACCEPT_EDITS_RUNS,
    DEFAULT_MODE_RUNS,
    READ_ONLY,
    Declaration,
    Effect,
    HookVerdict,
    declares,
)
from memagent.permissions.rules import (
    PATH_RULES,
    PermissionRuleError,
    Rule,
    bash_allowed_by,
    bash_rule_hits,
    parse_rules,
    path_matches,
    resolve,
)
from memagent.protected import protected_reason

MODES = ("default", "acceptEdits", "plan", "bypassPermissions")
Action = Literal["allow", "ask", "deny"]
MODE_RUNS = {"default": DEFAULT_MODE_RUNS, "acceptEdits": ACCEPT_EDITS_RUNS, "plan": READ_ONLY}
PLAN_REFUSAL = (
    "{name} {effects} and this session is in plan mode, where only read-only tools run; finish the plan "
    "and present it to the user instead"
)


@dataclass(frozen=True)
class Verdict:
    action: Action
    reason: str
    rule: Rule | None = None
    declaration: Declaration | None = None
    by_hook: bool = False  # a hook's own decision settled it


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise PermissionRuleError(f"unknown permission mode {mode!r}; use one of: {', '.join(MODES)}")
    return mode


@dataclass(frozen=True)
class RuleSource:
    """The rules one place wrote: a settings file, the environment, the saved "always" answers."""

    origin: str
    allow: Sequence[str] = ()
    ask: Sequence[str] = ()
    deny: Sequence[str] = ()


@dataclass(frozen=True)
class Policy:
    """The mode and the rules, over one project (root) and the user's home."""

    mode: str = "default"
    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    root: Path = field(default_factory=Path.cwd)
    home: Path = field(default_factory=Path.home)

    @classmethod
    def from_sources(cls, mode: str, sources: Iterable[RuleSource], *, root: Path, home: Path | None = None) -> Policy:
        """Parse every source's rules; PermissionRuleError (one line) for a bad mode or rule."""
        allow: list[Rule] = []
        ask: list[Rule] = []
        deny: list[Rule] = []
        for source in sources:
            allow += parse_rules(source.allow, "allow", source.origin)
            ask += parse_rules(source.ask, "ask", source.origin)
            deny += parse_rules(source.deny, "deny", source.origin)
        return cls(check_mode(mode), tuple(allow), tuple(ask), tuple(deny), Path(root).resolve(), home or Path.home())

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
    ) -> Policy:
        return cls.from_sources(mode, [RuleSource("", allow, ask, deny)], root=root, home=home)

    def with_mode(self, mode: str) -> Policy:
        return replace(self, mode=check_mode(mode))

    def with_allow(self, rules: Iterable[str], origin: str = "") -> Policy:
        return replace(self, allow=self.allow + parse_rules(rules, "allow", origin))

    # -------------------------------------------------------------- deciding

    def decide(self, name: str, declaration: Declaration, hook: HookVerdict | None = None) -> Verdict:
        """allow, ask or deny this call, with the reason and the rule that decided it."""
        declared = self.refine(declaration)
        refusal = self._refusal(name, declared, hook)
        if refusal is not None:
            return refusal
        if self.mode != "bypassPermissions":
            rule = self._first_hit(self.ask, name, declared)
            if rule is not None:
                return Verdict("ask", f"the rule {rule.named()} asks before {name} runs", rule, declared)
        if hook is not None and hook.action == "ask":
            return Verdict(
                "ask",
                f"{hook.source} asks: {hook.reason}" if hook.reason else f"{hook.source} asks",
                None,
                declared,
                by_hook=True,
            )
        if Effect.WRITE_PROTECTED in declared.effects:
            return self._protected(name, declared)
        rule = self._allowed_by(name, declared)
        if rule is not None:
            return Verdict("allow", f"allowed by the rule {rule.named()}", rule, declared)
        if hook is not None and hook.action == "allow":
            return Verdict("allow", f"allowed by {hook.source}", None, declared, by_hook=True)
        return self._by_mode(name, declared)

    def refine(self, declaration: Declaration) -> Declaration:
        """Writes classified by where they land: protected paths, outside the project."""
        if not declaration.writes or not declaration.paths:
            return declaration
        effects = set(declaration.effects)
        for raw in declaration.paths:
            where = self._where(raw)
            if where is not None:
                effects.discard(Effect.WRITE)
                effects.add(where)
        return replace(declaration, effects=frozenset(effects))

    def _where(self, raw: str) -> Effect | None:
        path = resolve(raw, self.root)
        try:
            relative = path.relative_to(self.root)
        except ValueError:
            return Effect.WRITE_OUTSIDE
        if protected_reason(relative.as_posix()) or protected_reason(Path(raw).as_posix().lstrip("/")):
            return Effect.WRITE_PROTECTED
        return None

    def _refusal(self, name: str, declared: Declaration, hook: HookVerdict | None) -> Verdict | None:
        if declared.command is not None:
            from memagent.permissions.danger import dangerous_reason

            danger = dangerous_reason(declared.command)
            if danger:
                return Verdict("deny", f"{danger}; if it is really needed, ask the user to run it", None, declared)
        rule = self._first_hit(self.deny, name, declared)
        if rule is not None:
            return Verdict("deny", self._denied_why(name, rule, declared), rule, declared)
        if hook is not None and hook.action == "deny":
            return Verdict("deny", f"{hook.source} says: {hook.reason or 'blocked'}", None, declared, by_hook=True)
        if self.mode == "plan" and not declared.reads_only:
            return Verdict("deny", PLAN_REFUSAL.format(name=name, effects=declared.describe()), None, declared)
        return None

    def _denied_why(self, name: str, rule: Rule, declared: Declaration) -> str:
        why = f"{name} is denied by the permission rule {rule.named()}"
        if declared.command is not None and rule.pattern is not None:
            from memagent.permissions.shell import analyse

            hidden = analyse(declared.command).hidden
            if hidden:
                why += f" (the command hides what it runs — {hidden[0]} — so the rule could match it)"
        return why

    def _protected(self, name: str, declared: Declaration) -> Verdict:
        path_rules = [r for r in self.allow if r.tool in PATH_RULES and r.pattern is not None]
        rule = next((r for r in path_rules if self._path_rule_hits(r, declared)), None)
        if rule is not None:
            return Verdict("allow", f"allowed by the rule {rule.named()}, which names this path", rule, declared)
        shown = ", ".join(declared.paths)
        reasons = [protected_reason(Path(p).as_posix().lstrip("/")) for p in declared.paths]
        detail = next((r for r in reasons if r), "it lies outside what the project may change")
        return Verdict("ask", f"{name} writes {shown}, a protected path: {detail}", None, declared)

    def _by_mode(self, name: str, declared: Declaration) -> Verdict:
        if self.mode == "bypassPermissions":
            return Verdict("allow", "bypassPermissions mode", None, declared)
        runs = MODE_RUNS.get(self.mode, DEFAULT_MODE_RUNS)
        extra = declared.effects - runs
        if not extra:
            return Verdict("allow", f"{self.mode} mode runs what {name} does ({declared.describe()})", None, declared)
        what = ", ".join(effect.value for effect in Effect if effect in extra)
        reason = f"{name} {what}"
        if declared.command is not None:
            reason += _shell_detail(declared.command)
        if declared.note:
            reason += f" ({declared.note})"
        return Verdict("ask", reason, None, declared)

    # -------------------------------------------------------------- matching

    def _first_hit(self, rules: tuple[Rule, ...], name: str, declared: Declaration) -> Rule | None:
        return next((rule for rule in rules if self._hits(rule, name, declared)), None)

    def _hits(self, rule: Rule, name: str, declared: Declaration) -> bool:
        if rule.tool == "Bash":
            if declared.command is None:
                return False
            from memagent.permissions.shell import analyse

            return bash_rule_hits(rule, declared.command, analyse(declared.command))
        if rule.tool in PATH_RULES:
            return self._path_rule_hits(rule, declared)
        if name.startswith("mcp__"):
            return name == rule.tool or name.startswith(rule.tool + "__")
        return rule.tool == name and rule.pattern is None

    def _path_rule_hits(self, rule: Rule, declared: Declaration) -> bool:
        if not declared.paths:
            return False
        if rule.tool == "Read" and (declared.writes or Effect.READ not in declared.effects):
            return False
        if rule.tool in ("Edit", "Write") and not declared.writes:
            return False
        if rule.pattern is None:
            return True
        return any(path_matches(rule.pattern, resolve(raw, self.root), self.root, self.home) for raw in declared.paths)

    def _allowed_by(self, name: str, declared: Declaration) -> Rule | None:
        if declared.command is not None:
            from memagent.permissions.shell import analyse

            return bash_allowed_by(self.allow, declared.command, analyse(declared.command))
        return self._first_hit(self.allow, name, declared)

    def describe(self) -> list[str]:
        """Mode and rules as lines, each rule with where it came from."""
        lines = [f"mode: {self.mode}"]
        for kind, rules in (("deny", self.deny), ("ask", self.ask), ("allow", self.allow)):
            lines.append(f"{kind}: " + (", ".join(rule.named() for rule in rules) if rules else "(none)"))
        return lines

    def asks_for(self) -> list[str]:
        """What asks in this mode, by effect (for ``doctor`` and ``/permissions``)."""
        if self.mode == "bypassPermissions":
            return [Effect.WRITE_PROTECTED.value]
        runs = MODE_RUNS.get(self.mode, DEFAULT_MODE_RUNS)
        return [effect.value for effect in Effect if effect not in runs]


def _shell_detail(command: str) -> str:
    from memagent.permissions.shell import analyse

    analysis = analyse(command)
    if analysis.hidden:
        return f": the command hides what it runs ({analysis.hidden[0]})"
    if analysis.complex:
        return f": the command has {analysis.complex[0]}, which no allow rule approves"
    return ": no allow rule covers it"


def suggested_rule(name: str, declaration: Declaration) -> str | None:
    """The rule an "always" answer saves: exactly this command, this file, or this MCP tool;
    None when no rule can say "this call and nothing wider" (memory writes, task changes)."""
    if declaration.command is not None:
        command = declaration.command.strip()
        return f"Bash({command})" if command else None
    if declaration.writes and len(declaration.paths) == 1:
        path = declaration.paths[0]
        if path and not any(ch in path for ch in "*?[()"):
            return f"Edit({path})"
        return None
    if name.startswith("mcp__"):
        return name
    return None


SAVED_ORIGIN = "an 'always' answer saved for this project"


def _call_key(name: str, tool_input: Mapping[str, object] | None) -> str:
    return name + "\0" + json.dumps(tool_input or {}, sort_keys=True, ensure_ascii=False, default=str)


@dataclass
class Gate:
    """One session's gate: the policy, widened by each "always" answer (saved for the project
    through ``save`` as a rule naming exactly that call; a call no rule can name exactly — a
    memory write, an MCP call's arguments — is remembered for this session only, with its exact
    input). What the agent loop, hooks and custom commands consult."""

    policy: Policy
    save: Callable[[str], None] | None = None
    _approved_calls: set[str] = field(default_factory=set)

    @property
    def mode(self) -> str:
        return self.policy.mode

    def decide(
        self,
        name: str,
        declaration: Declaration,
        hook: HookVerdict | None = None,
        tool_input: Mapping[str, object] | None = None,
    ) -> Verdict:
        verdict = self.policy.decide(name, declaration, hook)
        if (
            verdict.action == "ask"
            and verdict.rule is None
            and not verdict.by_hook
            and _call_key(name, tool_input) in self._approved_calls
        ):
            return replace(verdict, action="allow", reason="approved with 'always' earlier in this session")
        return verdict

    def decide_command(self, command: str, *, source: str = "a custom command") -> Verdict:
        """A shell command a project or user file wants to run (a custom command's ``!`` line)."""
        return self.policy.decide(source, declares(Effect.RUN, command=command))

    def always(self, name: str, declaration: Declaration, tool_input: Mapping[str, object] | None = None) -> str | None:
        """The user answered "always": approve exactly this call from now on; the rule saved
        (None: remembered for this session only, with its exact input)."""
        rule = suggested_rule(name, self.policy.refine(declaration))
        if rule is None:
            self._approved_calls.add(_call_key(name, tool_input))
            return None
        self.policy = self.policy.with_allow([rule], SAVED_ORIGIN)
        if self.save is not None:
            self.save(rule)
        return rule

    def describe(self) -> list[str]:
        return self.policy.describe()


__all__ = [
    "Gate",
    "MODES",
    "Policy",
    "RuleSource",
    "SAVED_ORIGIN",
    "Verdict",
    "check_mode",
    "suggested_rule",
]
