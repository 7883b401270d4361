"""Find secrets in text and replace them before anything is written to disk.

A leaf module (it imports nothing of memagent): transcripts, saved command outputs, the REPL
history and the memory write gate all use it.

Each finding names the *kind* of secret and where it is, never the secret itself, so a refusal
can be shown to the model or the user without leaking what it refused. :func:`redact` replaces
every finding with a placeholder naming its kind, e.g. ``[REDACTED:anthropic-key]``.

Patterns are deliberately broad for credentials with a recognisable shape (API keys, tokens,
private keys, connection strings, ``.env`` lines, ``password = …`` assignments). Prose
("the deploy password is Tr0ub4dor-prod-99", "my token is …") is matched only when the value
after the keyword looks like a credential (digits, symbols or inner capitals), so ordinary
sentences ("the token is refreshed every hour") are left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import IO

# Values that are clearly placeholders, not secrets: "$DB_PASSWORD", "<token>", "{{secret}}", "***".
_PLACEHOLDER = r"(?i)^(\$|<|\{|%|\*+$|x{3,}$|\.\.\.|none$|null$|redacted|\[redacted|changeme$)"

_ASSIGNMENT_WORDS = (
    r"password|passwd|passphrase|pwd|secret|client[_-]?secret|token|auth[_-]?token|access[_-]?token"
    r"|refresh[_-]?token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
)
_PROSE_WORDS = (
    r"password|passwd|passphrase|passcode|pin code|secret|secret key|token|api[ _-]?key|access key"
    r"|private key|credentials?"
)


@dataclass(frozen=True)
class _Pattern:
    kind: str  # shown to people: "Anthropic API key"
    slug: str  # used in placeholders: "anthropic-key"
    source: str  # the regular expression, compiled on first use (re caches it)
    group: int = 0  # the group holding the secret value (0: the whole match)
    check: str = ""  # "" | "env" | "assignment" | "prose": extra test on the captured value
    # lowercase strings one of which any match contains: the pattern runs only when the text
    # has one (a plain substring search is far cheaper than the regex); () = always run
    hints: tuple[str, ...] = ()

    @property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.source)


# Order matters where patterns overlap: the first one to claim a span keeps it
# (Anthropic's ``sk-ant-`` and OpenAI's ``sk-proj-`` before the generic ``sk-``).
_PATTERNS: tuple[_Pattern, ...] = (
    _Pattern(
        "private key block",
        "private-key",
        (
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*\Z)"
        ),
        hints=("-----begin ",),
    ),
    _Pattern("Anthropic API key", "anthropic-key", (r"\bsk-ant-[A-Za-z0-9_\-]{16,}"), hints=("sk-ant-",)),
    _Pattern(
        "OpenAI API key", "openai-key", (r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{16,}"), hints=("sk-",)
    ),
    _Pattern("OpenAI API key", "openai-key", (r"\bsk-(?!ant-)[A-Za-z0-9]{20,}"), hints=("sk-",)),
    _Pattern(
        "AWS access key id",
        "aws-access-key-id",
        (r"\b(?:AKIA|ASIA|AIDA|AROA)[0-9A-Z]{16}\b"),
        hints=("akia", "asia", "aida", "aroa"),
    ),
    _Pattern(
        "AWS secret access key",
        "aws-secret-key",
        (r"(?i)aws.{0,24}?(?:secret|key).{0,16}?[=:]\s*['\"]?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"),
        1,
        hints=("aws",),
    ),
    _Pattern(
        "GitHub token",
        "github-token",
        (r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b"),
        hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _Pattern("GitHub token", "github-token", (r"\bgithub_pat_[A-Za-z0-9_]{22,}"), hints=("github_pat_",)),
    _Pattern("Slack token", "slack-token", (r"\bxox[baprs]-[A-Za-z0-9-]{10,}"), hints=("xox",)),
    _Pattern("Google API key", "google-api-key", (r"\bAIza[0-9A-Za-z_\-]{35}"), hints=("aiza",)),
    _Pattern(
        "JSON Web Token",
        "jwt",
        (r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        hints=("eyj",),
    ),
    _Pattern(
        "connection string with a password",
        "connection-password",
        (r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:([^\s@/]+)@[^\s/]+"),
        1,
        hints=("://",),
    ),
    _Pattern(
        ".env secret line",
        "env-secret",
        # a line of a .env file, also as read_file shows it ("    12\tAPI_KEY=…")
        (
            r"(?m)^\s*(?:\d+\t)?(?:export\s+)?[A-Z][A-Z0-9_]*"
            r"(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?)"
            r"[A-Z0-9_]*\s*=\s*['\"]?([^\s'\"#]+)"
        ),
        1,
        "env",
        hints=("key", "token", "secret", "pass", "pwd", "credential"),
    ),
    _Pattern(
        "password or secret assignment",
        "password",
        (
            rf"(?i)(?<![a-z0-9])(?=[pscatr])(?:{_ASSIGNMENT_WORDS})(?![a-z0-9])['\"]?\s*(?:=>|=|:)\s*['\"`]?([^\s'\"`,;]{{4,}})"
        ),
        1,
        "assignment",
        hints=("pass", "pwd", "secret", "token", "key"),
    ),
    _Pattern(
        "password or secret in prose",
        "password",
        # "the production deploy password is Tr0ub4dor-prod-99", "my token for the CI is: …"
        (
            rf"(?i)(?<![a-z0-9])(?=[pscatr])(?:{_PROSE_WORDS})(?![a-z0-9])(?:\s+(?:for|of|on|to)\s+[\w .'/-]{{1,40}}?)?"
            r"\s+(?:is|was|are|=|reads|is set to|set to)\s*:?\s+['\"`]?([^\s'\"`,;]{6,})"
        ),
        1,
        "prose",
        hints=("pass", "pin code", "secret", "token", "key", "credential"),
    ),
)

_TRAILING_PUNCTUATION = ".,;:!?)]}>"


# Values that are code, not credentials: numbers ("256", "2_048"), calls, indexing and literals
# ("get_secret()", "tokens[i]", "(", "[PAD]"), attribute paths ("creds.api_key") and variable
# names ("api_key", "API_KEY") — what reading source code shows after ``token =``.
_NUMBER = r"[\d_.]+"
_CODE_LIKE = r"[(\[{].*|[A-Za-z_][\w.]*[(\[].*|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[a-z]+(?:_[a-z]+)+|[A-Z]+(?:_[A-Z]+)+"


def _looks_like_code(value: str) -> bool:
    return bool(re.fullmatch(_NUMBER, value) or re.fullmatch(_CODE_LIKE, value))


def _env_value_is_secret(value: str) -> bool:
    """After ``API_KEY=``: anything but code (``MAX_TOKENS = 256``, ``SECRET_KEY = get_key()``)."""
    return not _looks_like_code(value)


def _assignment_value_is_secret(value: str) -> bool:
    """After ``password:``-style words: a credential rather than prose or code.

    Prose ("password: must be 12 characters") follows the colon with an ordinary word;
    credentials have digits, symbols, mixed case or length.
    """
    if _looks_like_code(value):
        return False
    if any(not ch.isalpha() for ch in value):
        return True
    return len(value) >= 10 or (value != value.lower() and value != value.capitalize())


def _prose_value_is_secret(value: str) -> bool:
    """After "password is": only values no sentence would use as a word.

    A digit, a symbol inside the word, or a capital after the first letter; ordinary words
    ("refreshed", "stored", "Required") and code references (``settings.DB_PASSWORD``) are prose.
    """
    if any(ch.isdigit() for ch in value):
        return True
    if _looks_like_code(value):
        return False
    if any(not ch.isalpha() and ch not in "-'" for ch in value):
        return True
    return any(ch.isupper() for ch in value[1:])


_VALUE_CHECKS = {
    "env": _env_value_is_secret,
    "assignment": _assignment_value_is_secret,
    "prose": _prose_value_is_secret,
}


@dataclass(frozen=True)
class SecretFinding:
    kind: str
    start: int
    end: int
    slug: str = "secret"

    @property
    def placeholder(self) -> str:
        return f"[REDACTED:{self.slug}]"


def _value_span(pattern: _Pattern, match: re.Match[str]) -> tuple[int, int] | None:
    """The span to redact for one match, or None when the match is not a secret after all."""
    start, end = match.span(pattern.group)
    value = match.group(pattern.group)
    if pattern.check:
        stripped = value.rstrip(_TRAILING_PUNCTUATION)
        end -= len(value) - len(stripped)
        value = stripped
        if not value or not _VALUE_CHECKS[pattern.check](value):
            return None
    if pattern.group and re.match(_PLACEHOLDER, value):
        return None
    return start, end


def find_secrets(text: str) -> list[SecretFinding]:
    """Every secret-looking span in ``text`` (non-overlapping, in order of position)."""
    findings: list[SecretFinding] = []
    lowered = text.lower()
    for pattern in _PATTERNS:
        if pattern.hints and not any(hint in lowered for hint in pattern.hints):
            continue
        for match in pattern.regex.finditer(text):
            span = _value_span(pattern, match)
            if span is None:
                continue
            start, end = span
            if any(start < f.end and f.start < end for f in findings):
                continue
            findings.append(SecretFinding(pattern.kind, start, end, pattern.slug))
    return sorted(findings, key=lambda f: f.start)


def secret_kinds(text: str) -> list[str]:
    """The distinct kinds found, in order of first appearance."""
    kinds: list[str] = []
    for finding in find_secrets(text):
        if finding.kind not in kinds:
            kinds.append(finding.kind)
    return kinds


def contains_secret(text: str) -> bool:
    return bool(find_secrets(text))


def redact(text: str, mask: str | None = None) -> str:
    """``text`` with every secret replaced by a placeholder naming its kind
    (``[REDACTED:github-token]``), or by ``mask`` when one is given."""
    findings = find_secrets(text)
    if not findings:
        return text
    out, last = [], 0
    for finding in findings:
        out.append(text[last : finding.start])
        out.append(mask if mask is not None else finding.placeholder)
        last = finding.end
    out.append(text[last:])
    return "".join(out)


def redact_value(value: object) -> object:
    """Redact every string inside a JSON-like value (dicts, lists, strings), returning a copy
    only where something changed."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        items = [redact_value(item) for item in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    if isinstance(value, dict):
        pairs = {key: redact_value(item) for key, item in value.items()}
        return value if all(pairs[k] is value[k] for k in value) else pairs
    return value


_CHUNK_BYTES = 1 << 20


def _open_key_block(data: bytes) -> bool:
    """A private key block starts in ``data`` and does not end there."""
    start = data.rfind(b"-----BEGIN ")
    return start >= 0 and b"-----END " not in data[start:]


def _redact_bytes(data: bytes) -> bytes:
    text = data.decode("utf-8", errors="surrogateescape")
    return redact(text).encode("utf-8", errors="surrogateescape")


class RedactingWriter:
    """A binary writer that passes whole lines on to ``target`` with secrets redacted.

    Lines are collected up to about ``chunk_bytes`` (so a secret is never cut in two); a private
    key block that starts is held until its end line (up to 16 chunks). ``close`` (or leaving the
    ``with`` block) writes what is left; the target itself is not closed.
    """

    def __init__(self, target: IO[bytes], chunk_bytes: int = _CHUNK_BYTES) -> None:
        self._target = target
        self._chunk = chunk_bytes
        self._pending = b""

    def __enter__(self) -> "RedactingWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, data: bytes) -> int:
        self._pending += data
        if len(self._pending) < self._chunk:
            return len(data)
        cut = self._pending.rfind(b"\n") + 1
        ready = self._pending[:cut]
        if cut and (not _open_key_block(ready) or len(self._pending) >= 16 * self._chunk):
            self._target.write(_redact_bytes(ready))
            self._pending = self._pending[cut:]
        return len(data)

    def close(self) -> None:
        if self._pending:
            self._target.write(_redact_bytes(self._pending))
            self._pending = b""


def copy_redacted(source: IO[bytes], target: IO[bytes], chunk_bytes: int = _CHUNK_BYTES) -> None:
    """Copy ``source`` (from its current position) to ``target`` with secrets redacted."""
    with RedactingWriter(target, chunk_bytes) as writer:
        while data := source.read(chunk_bytes):
            writer.write(data)


__all__ = [
    "RedactingWriter",
    "SecretFinding",
    "contains_secret",
    "copy_redacted",
    "find_secrets",
    "redact",
    "redact_value",
    "secret_kinds",
]
