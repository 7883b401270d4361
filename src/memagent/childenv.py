"""The environment memagent hands to the processes it starts: never a secret by default.

Every child process memagent starts — a ``bash`` command (sandboxed or not), a ``!command``
typed in the REPL, a hook, an MCP server — gets a copy of memagent's environment *filtered*:

* by name: the agent's own credentials (``ANTHROPIC_*``, ``CLAUDE_*``,
  ``MEMAGENT_CHROMA_URL``) and any name matching one of :data:`SECRET_NAME_PATTERNS`
  (``*PASS*``, ``*PWD``, ``*TOKEN*``, ``*SECRET*``, ``*PAT``, ``*CREDENTIAL*``, ``*DSN``,
  ``*WEBHOOK*`` …; compared in capitals, ``PWD`` and ``OLDPWD`` are kept), ``KEY`` ending a part
  of the name (``API_KEY``, ``APIKEY``, ``AWS_ACCESS_KEY_ID``; not ``KEYBOARD``) or one of the
  words ``AUTH`` (``SSH_AUTH_SOCK``), ``PW`` (``DB_PW``), ``CRED``/``CREDS`` (``APP_CREDS``),
  ``SALT`` (``SESSION_SALT``) and ``MNEMONIC`` as a part of the name;
* by value: a URL carrying a password (``postgres://app:hunter2@db``) or a secret query
  parameter (``?token=…``), a webhook URL, or any value that the redactor recognises as a key
  (:func:`memagent.redact.contains_secret`), whatever the variable is called.

``pass_through`` names variables the user wants passed anyway (the ``sandbox_pass_env``
setting, e.g. ``["NPM_CONFIG_REGISTRY", "NPM_TOKEN"]``). The agent's API credentials
(:data:`NEVER_PASSED`) are never passed, whatever the setting says.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping

from memagent.redact import contains_secret

SECRET_NAME_PATTERNS = (
    "*PASS*", "*PWD", "*TOKEN*", "*SECRET*", "*PAT", "*CREDENTIAL*", "*DSN", "*WEBHOOK*",
    "*COOKIE*", "*CONNECTION_STRING*", "*CONN_STR*", "*_SAS", "*PRIVATE*",
)  # fmt: skip
# Names the patterns would catch that are not secrets.
KEPT_NAMES = frozenset({"PWD", "OLDPWD"})
SECRET_PREFIXES = ("ANTHROPIC_", "CLAUDE_")
SECRET_NAMES = frozenset({"MEMAGENT_CHROMA_URL", "DBUS_SESSION_BUS_ADDRESS"})
# The agent's own credentials: passed to no child, whatever the settings say.
NEVER_PASSED = frozenset({"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"})

# Words that name a secret when they are a whole part of the name (``DB_PW``, not ``PWM_MODE``).
_SECRET_WORD = re.compile(r"(^|_)(AUTH|PW|CREDS?|SALT|MNEMONIC)($|_)")
# ``*KEY*`` where KEY ends a part of the name (API_KEY, APIKEY, AWS_ACCESS_KEY_ID, SSH_KEYS),
# so that KEYBOARD_LAYOUT stays.
_KEY_WORD = re.compile(r"KEYS?($|_)")
_URL_WITH_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@\s:]*:[^/@\s]+@", re.IGNORECASE)
_SECRET_QUERY = re.compile(
    r"^[a-z][a-z0-9+.-]*://\S*[?&;](access_token|token|api_?key|key|sig|signature|password|secret|auth)=",
    re.IGNORECASE,
)
_WEBHOOK_URL = re.compile(
    r"^https?://([^/\s]*\.)?(hooks\.slack\.com|discord(app)?\.com/api/webhooks|[^/\s]*webhook[^/\s]*|"
    r"hooks\.zapier\.com|outlook\.office(365)?\.com/webhook)|^https?://\S*/webhooks?(/|$)",
    re.IGNORECASE,
)


def secret_name(name: str) -> bool:
    """True when a variable's name says it holds a secret (see the module docstring)."""
    upper = name.upper()
    if upper in KEPT_NAMES:
        return False
    if upper.startswith(SECRET_PREFIXES) or upper in SECRET_NAMES:
        return True
    if _SECRET_WORD.search(upper) or _KEY_WORD.search(upper):
        return True
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in SECRET_NAME_PATTERNS)


def secret_value(value: str) -> bool:
    """True when a value is shaped like a secret: a URL with a password or a secret parameter,
    a webhook URL, or a key the redactor knows."""
    text = value.strip()
    if not text or text.startswith("()"):  # empty, or an exported shell function
        return False
    if _URL_WITH_PASSWORD.match(text) or _SECRET_QUERY.match(text) or _WEBHOOK_URL.match(text):
        return True
    return contains_secret(text)


def is_secret_variable(name: str, value: str) -> bool:
    """True for the agent's own credentials and anything named or shaped like a secret."""
    return name.upper() in NEVER_PASSED or secret_name(name) or secret_value(value)


def filtered_environment(env: Mapping[str, str], pass_through: Iterable[str] = ()) -> dict[str, str]:
    """A copy of ``env`` without secrets; names in ``pass_through`` are kept (except the agent's
    API credentials, :data:`NEVER_PASSED`)."""
    keep = {name.upper() for name in pass_through} - NEVER_PASSED
    return {name: value for name, value in env.items() if name.upper() in keep or not is_secret_variable(name, value)}


__all__ = [
    "NEVER_PASSED",
    "SECRET_NAME_PATTERNS",
    "filtered_environment",
    "is_secret_variable",
    "secret_name",
    "secret_value",
]
