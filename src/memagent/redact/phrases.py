"""Secrets known by their context rather than their shape: ``.env`` lines, ``password = …``
assignments, and prose such as "the deploy password is Tr0ub4dor-prod-99".

These are memagent's own rules (no detector library judges prose). Prose is matched only when
the value after the keyword looks like a credential (digits, symbols or inner capitals), so
ordinary sentences ("the token is refreshed every hour") and code ("token = tokens[i]",
``MAX_TOKENS = 256``) are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# Values that are clearly placeholders, not secrets: "$DB_PASSWORD", "<token>", "{{secret}}", "***".
PLACEHOLDER = (
    r"(?i)^(\$|<|\{|%|\*+$|x{3,}$|\.\.\.|none$|null$|redacted|\[redacted|changeme$"
    r"|-.*|pass$|password$|passwd$|pwd$|secret$|token$)"  # ${VAR:-default}, user:pass@host
)

_ASSIGNMENT_WORDS = (
    r"password|passwd|passphrase|pwd|secret|client[_-]?secret|token|auth[_-]?token|access[_-]?token"
    r"|refresh[_-]?token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
)
_PROSE_WORDS = (
    r"password|passwd|passphrase|passcode|pin code|secret|secret key|token|api[ _-]?key|access key"
    r"|private key|credentials?"
)
_TRAILING_PUNCTUATION = ".,;:!?)]}>"

# Values that are code, not credentials: numbers ("256", "2_048"), calls, indexing and literals
# ("get_secret()", "tokens[i]", "(", "[PAD]"), attribute paths ("creds.api_key") and variable
# names ("api_key", "API_KEY") — what reading source code shows after ``token =``.
_NUMBER = r"[\d_.]+"
_CODE_LIKE = r"\\[xuUnrt0-9].*|[(\[{].*|[A-Za-z_][\w.]*[(\[].*|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[a-z]+(?:_[a-z]+)+|[A-Z]+(?:_[A-Z]+)+"


def _looks_like_code(value: str) -> bool:
    return bool(re.fullmatch(_NUMBER, value) or re.fullmatch(_CODE_LIKE, value))


_SETTING_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "enabled", "disabled"})


def _env_value_is_secret(value: str) -> bool:
    """After ``API_KEY=``: anything but code (``MAX_TOKENS = 256``, ``SECRET_KEY = get_key()``)
    and switches (``BYPASS_CACHE=true``)."""
    return not _looks_like_code(value) and value.lower() not in _SETTING_WORDS


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
    if _looks_like_code(value):
        return False
    if any(ch.isdigit() for ch in value):
        return True
    if any(not ch.isalpha() and ch not in "-'" for ch in value):
        return True
    return any(ch.isupper() for ch in value[1:])


@dataclass(frozen=True)
class Phrase:
    """One contextual rule: the regex, the group holding the value, and the test on the value."""

    kind: str
    slug: str
    source: str  # the regular expression, compiled on first use (``re`` caches it)
    is_secret: Callable[[str], bool]
    # lowercase strings one of which any match contains: the rule runs only when the text has one
    hints: tuple[str, ...]

    def spans(self, text: str, lowered: str) -> Iterator[tuple[int, int]]:
        if not any(hint in lowered for hint in self.hints):
            return
        for match in re.finditer(self.source, text):
            start, end = match.span(1)
            value = match.group(1)
            stripped = value.rstrip(_TRAILING_PUNCTUATION)
            end -= len(value) - len(stripped)
            if stripped and not re.match(PLACEHOLDER, stripped) and self.is_secret(stripped):
                yield start, end


PHRASES: tuple[Phrase, ...] = (
    Phrase(
        ".env secret line",
        "env-secret",
        # a line of a .env file, also as read_file shows it ("    12\tAPI_KEY=…"), or such an
        # assignment after a word of a command line ("echo DB_PW=…", "env APP_CREDS=… cmd")
        (
            r"(?m)(?:^\s*(?:\d+\t)?(?:export\s+)?(?:[A-Z][A-Z0-9_]*"
            r"(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?|DSN|WEBHOOK)[A-Z0-9_]*"
            r"|[A-Z][A-Z0-9_]*_(?:PAT|PW|CREDS|SALT))"
            r"|(?<=[\s'\"])[A-Z][A-Z0-9_]*_(?:PAT|PW|CREDS|SALT))"
            r"\s*=\s*['\"]?([^\s'\"#]{3,})"
        ),
        _env_value_is_secret,
        ("key", "token", "secret", "pass", "pwd", "credential", "dsn", "webhook", "_pat", "_pw", "_creds", "_salt"),
    ),
    Phrase(
        "password or secret assignment",
        "password",
        (
            rf"(?i)(?<![a-z0-9])(?=[pscatr])(?:{_ASSIGNMENT_WORDS})(?![a-z0-9])['\"]?\s*(?:=>|=|:)\s*['\"`]?([^\s'\"`,;]{{4,}})"
        ),
        _assignment_value_is_secret,
        ("pass", "pwd", "secret", "token", "key"),
    ),
    Phrase(
        "password or secret in prose",
        "password",
        # "the production deploy password is Tr0ub4dor-prod-99", "my token for the CI is: …"
        (
            rf"(?i)(?<![a-z0-9])(?=[pscatr])(?:{_PROSE_WORDS})(?![a-z0-9])(?:\s+(?:for|of|on|to)\s+[\w .'/-]{{1,40}}?)?"
            r"\s+(?:is|was|are|=|reads|is set to|set to)\s*:?\s+['\"`]?([^\s'\"`,;]{6,})"
        ),
        _prose_value_is_secret,
        ("pass", "pin code", "secret", "token", "key", "credential"),
    ),
)

__all__ = ["PHRASES", "PLACEHOLDER", "Phrase"]
