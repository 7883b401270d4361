"""Permissions: the gate that decides every action, and what it decides from.

- :mod:`.effects` — what a call does, as its tool declares it (reads, writes in the project,
  writes a protected path, runs code, saves a user memory …);
- :mod:`.shell` — how a shell command is read (tree-sitter's bash grammar, failing closed);
- :mod:`.danger` — commands refused in every mode (``rm -rf /``, ``sudo`` …);
- :mod:`.rules` — ``allow`` / ``ask`` / ``deny`` rules and where each came from;
- :mod:`.gate` — the policy (mode + rules) and the session's gate: allow, ask(reason) or
  deny(reason) for each call.

Imports only leaf modules, so tools can declare effects and the loop can ask the gate without
knowing any store. The parser loads on first use.
"""

from memagent.permissions.effects import UNDECLARED, Declaration, Effect, HookVerdict, declares
from memagent.permissions.gate import (
    MODES,
    SAVED_ORIGIN,
    Gate,
    Policy,
    RuleSource,
    Verdict,
    check_mode,
    suggested_rule,
)
from memagent.permissions.rules import PermissionRuleError, Rule, parse_rule, parse_rules

__all__ = [
    "Declaration",
    "Effect",
    "Gate",
    "HookVerdict",
    "MODES",
    "PermissionRuleError",
    "Policy",
    "Rule",
    "RuleSource",
    "SAVED_ORIGIN",
    "UNDECLARED",
    "Verdict",
    "check_mode",
    "declares",
    "parse_rule",
    "parse_rules",
    "suggested_rule",
]
