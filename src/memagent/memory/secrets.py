"""A secret scanner for the memory write gate.

It names the *kind* of secret found and where, never the secret itself, so a refusal can be shown
to the model or the user without leaking what it refused. Patterns are deliberately broad: a
false refusal costs one rephrased memory, a false acceptance writes a credential to disk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Values that are clearly placeholders, not secrets: "$DB_PASSWORD", "<token>", "{{secret}}", "***".
_PLACEHOLDER = re.compile(r"^(\$|<|\{|%|\*+$|x{3,}$|\.\.\.|none$|null$|redacted|changeme$)", re.IGNORECASE)

_ASSIGNMENT_WORDS = (
    r"password|passwd|passphrase|pwd|secret|client[_-]?secret|token|auth[_-]?token|access[_-]?token"
    r"|refresh[_-]?token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
)

# (kind, pattern, value group or 0 for the whole match). Order matters where prefixes overlap:
# Anthropic's ``sk-ant-`` and OpenAI's ``sk-proj-`` come before the generic ``sk-``.
_PATTERNS: tuple[tuple[str, re.Pattern[str], int], ...] = (
    ("private key block", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"), 0),
    ("Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}"), 0),
    ("OpenAI API key", re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{16,}"), 0),
    ("OpenAI API key", re.compile(r"\bsk-(?!ant-)[A-Za-z0-9]{20,}"), 0),
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA|AIDA|AROA)[0-9A-Z]{16}\b"), 0),
    (
        "AWS secret access key",
        re.compile(
            r"(?i)aws.{0,24}?(?:secret|key).{0,16}?[=:]\s*['\"]?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        1,
    ),
    ("GitHub token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b"), 0),
    ("GitHub token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"), 0),
    ("Slack token", re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{10,}"), 0),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), 0),
    ("JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0),
    (
        "connection string with a password",
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:([^\s@/]+)@[^\s/]+"),
        1,
    ),
    (
        ".env secret line",
        re.compile(
            r"(?m)^\s*(?:export\s+)?[A-Z][A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?)"
            r"[A-Z0-9_]*\s*=\s*['\"]?([^\s'\"#]+)"
        ),
        1,
    ),
    (
        "password or secret assignment",
        re.compile(
            rf"(?i)(?<![a-z0-9])(?:{_ASSIGNMENT_WORDS})(?![a-z0-9])['\"]?\s*(?:=>|=|:)\s*['\"]?([^\s'\",;]{{4,}})"
        ),
        1,
    ),
)


def _secret_like(value: str) -> bool:
    """A value after ``password:``-style words that is a credential rather than prose.

    Prose ("password: must be 12 characters") follows the colon with an ordinary word;
    credentials have digits, symbols, mixed case or length.
    """
    if any(not ch.isalpha() for ch in value):
        return True
    return len(value) >= 10 or (value != value.lower() and value != value.capitalize())


# Patterns whose captured value must also pass _secret_like.
_PROSE_PRONE = frozenset({"password or secret assignment"})


@dataclass(frozen=True)
class SecretFinding:
    kind: str
    start: int
    end: int


def find_secrets(text: str) -> list[SecretFinding]:
    """Every secret-looking span in ``text`` (non-overlapping, in order of position)."""
    findings: list[SecretFinding] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern, group in _PATTERNS:
        for match in pattern.finditer(text):
            value = match.group(group)
            if group and _PLACEHOLDER.match(value):
                continue
            if kind in _PROSE_PRONE and not _secret_like(value):
                continue
            start, end = match.span(group)
            if any(start < e and s < end for s, e in taken):
                continue
            taken.append((start, end))
            findings.append(SecretFinding(kind, start, end))
    return sorted(findings, key=lambda f: f.start)


def secret_kinds(text: str) -> list[str]:
    """The distinct kinds found, in order of first appearance."""
    kinds: list[str] = []
    for finding in find_secrets(text):
        if finding.kind not in kinds:
            kinds.append(finding.kind)
    return kinds


def redact(text: str, mask: str = "[REDACTED]") -> str:
    """``text`` with every finding replaced by ``mask`` (for logs; the gate refuses instead)."""
    out, last = [], 0
    for finding in find_secrets(text):
        out.append(text[last : finding.start])
        out.append(mask)
        last = finding.end
    out.append(text[last:])
    return "".join(out)


__all__ = ["SecretFinding", "find_secrets", "redact", "secret_kinds"]
