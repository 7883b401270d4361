"""Credentials known by their shape: detect-secrets' plugins, plus the shapes they do not know.

The maintained part comes from `detect-secrets` (Yelp), used in-process as a library: each of
its regex plugins' own patterns (``denylist``) is run here, and plugins that judge a value
further (the JWT plugin decodes the token) confirm it with their own ``analyze_string``.
Nothing is verified over the network. The plugins are imported on first use, and a plugin runs
only when the text holds one of its hints (a plain substring test is far cheaper than a regex)
and, for plugins whose hints are common characters, matches its *screen*: a short pattern that
every match of the plugin's own patterns contains (a Discord bot token holds a run of 24 token
characters, a dot, 6 more and a dot), so plain text such as ``PATH`` never loads detect-secrets.

memagent adds, as :data:`SHAPES`, the providers detect-secrets has no plugin for (Anthropic,
fine-grained GitHub tokens, npm, Hugging Face, Google, Azure SAS signatures, bearer and basic
``Authorization`` values, Discord webhooks, Shopify, Square access tokens, DigitalOcean,
Heroku, Databricks, Datadog, Sentry DSNs, Mapbox, Mailgun).

Stripe's publishable keys (``pk_live_…``) are public by design (they are meant to be embedded
in web pages) and are left alone; its secret and restricted keys are redacted.

A match must start at a token boundary (``xAKIA…`` inside a longer word is not a key) and is
extended to the end of its token: a pattern that knows only a key's first 24 characters never
leaves the rest of the key behind.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from memagent.redact.phrases import PLACEHOLDER

TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
JWT_CHARS = TOKEN_CHARS | frozenset(".=+/")
NO_EXTENSION: frozenset[str] = frozenset()

Span = tuple[int, int]


def _extend(text: str, start: int, end: int, chars: frozenset[str]) -> Span:
    while end < len(text) and text[end] in chars:
        end += 1
    return start, end


def _at_boundary(text: str, start: int) -> bool:
    return start == 0 or text[start - 1] not in TOKEN_CHARS


@dataclass(frozen=True)
class Plugin:
    """One detect-secrets plugin: ``module:Class`` under ``detect_secrets.plugins``, what each of
    its patterns finds (``kinds``: (kind, slug), the last one repeating), the group of each
    pattern that holds the value (0: the whole match), and hints (lowercase; () = always run)."""

    path: str
    kinds: tuple[tuple[str, str], ...]
    hints: tuple[str, ...] = ()
    groups: tuple[int, ...] = (0,)
    extend: frozenset[str] = TOKEN_CHARS
    confirm: bool = False  # ask the plugin's own analyze_string about each value
    label: str = ""  # a prefix of the match kept in clear ("AccountKey=")
    placeholders: bool = False  # values such as "pass" or "${DB_PASSWORD}" are examples, not secrets
    screen: str = ""  # a pattern that every match of the plugin contains ("": hints only)

    def findings(self, text: str, lowered: str) -> Iterator[tuple[str, str, Span]]:
        if self.hints and not any(hint in lowered for hint in self.hints):
            return
        if self.screen and not re.search(self.screen, text):
            return
        plugin = _plugin(self.path)
        for number, regex in enumerate(plugin.denylist):
            kind, slug = self.kinds[min(number, len(self.kinds) - 1)]
            group = self.groups[min(number, len(self.groups) - 1)]
            for match in regex.finditer(text):
                span = self._span(text, match, group, plugin)
                if span is not None:
                    yield kind, slug, span

    def _span(self, text: str, match: re.Match[str], group: int, plugin: SecretsPlugin) -> Span | None:
        start, end = match.span(group)
        if start < 0 or start == end:
            return None
        if group == 0 and not _at_boundary(text, start):
            return None
        if self.label and text.startswith(self.label, start):
            start += len(self.label)
        if self.confirm and not any(True for _ in plugin.analyze_string(text[start:end])):
            return None
        if self.placeholders and re.match(PLACEHOLDER, text[start:end]):
            return None
        return _extend(text, start, end, self.extend)


class SecretsPlugin(Protocol):
    """What memagent uses of a detect-secrets plugin: its patterns and its own judgement."""

    denylist: Iterable[re.Pattern[str]]

    def analyze_string(self, string: str) -> Iterable[str]: ...


@functools.cache
def _plugin(path: str) -> SecretsPlugin:
    module, _, name = path.partition(":")
    plugin: SecretsPlugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)()
    return plugin


PLUGINS: tuple[Plugin, ...] = (
    Plugin(
        "aws:AWSKeyDetector",
        (("AWS access key id", "aws-access-key-id"), ("AWS secret access key", "aws-secret-key")),
        ("akia", "asia", "abia", "acca", "a3t", "aws"),
        groups=(0, 1),
    ),
    Plugin(
        "github_token:GitHubTokenDetector",
        (("GitHub token", "github-token"),),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    Plugin(
        "gitlab_token:GitLabTokenDetector",
        (("GitLab token", "gitlab-token"),),
        (
            "glpat-",
            "gldt-",
            "glft-",
            "glsoat-",
            "glrt-",
            "gr1348941",
            "glcbt-",
            "glimt-",
            "glptt-",
            "glagent-",
            "gloas-",
        ),
    ),
    Plugin(
        "slack:SlackDetector",
        (("Slack token", "slack-token"), ("Slack webhook", "slack-webhook")),
        ("xox", "hooks.slack.com"),
    ),
    Plugin("stripe:StripeDetector", (("Stripe secret key", "stripe-key"),), ("_live_",)),
    Plugin("openai:OpenAIDetector", (("OpenAI API key", "openai-key"),), ("t3blbkfj",)),
    Plugin("sendgrid:SendGridDetector", (("SendGrid API key", "sendgrid-key"),), ("sg.",)),
    Plugin("pypi_token:PypiTokenDetector", (("PyPI token", "pypi-token"),), ("pypi-",)),
    Plugin("npm:NpmDetector", (("npm token", "npm-token"),), ("_authtoken",), groups=(1,), extend=NO_EXTENSION),
    Plugin(
        "azure_storage_key:AzureStorageKeyDetector",
        (("Azure storage account key", "azure-storage-key"),),
        ("accountkey=",),
        extend=frozenset("+/="),
        label="AccountKey=",
    ),
    Plugin("square_oauth:SquareOAuthDetector", (("Square OAuth secret", "square-secret"),), ("sq0csp-",)),
    Plugin(
        "mailchimp:MailchimpDetector", (("Mailchimp API key", "mailchimp-key"),), ("-us",), screen=r"[0-9a-z]{32}-us\d"
    ),
    Plugin("jwt:JwtTokenDetector", (("JSON Web Token", "jwt"),), ("eyj",), extend=JWT_CHARS, confirm=True),
    Plugin(
        "discord:DiscordBotTokenDetector",
        (("Discord bot token", "discord-token"),),
        (".",),
        screen=r"[\w-]{24}\.[\w-]{6}\.",
    ),
    Plugin(
        "telegram_token:TelegramBotTokenDetector",
        (("Telegram bot token", "telegram-token"),),
        (":",),
        screen=r"\d{8}:[\w-]{35}",
    ),
    Plugin(
        "twilio:TwilioKeyDetector",
        (("Twilio account SID", "twilio-sid"), ("Twilio API key", "twilio-key")),
        ("ac", "sk"),
        screen=r"[AS][CK][a-z0-9]{32}",
    ),
    Plugin(
        "basic_auth:BasicAuthDetector",
        (("connection string with a password", "connection-password"),),
        ("://",),
        groups=(1,),
        extend=NO_EXTENSION,
        placeholders=True,
    ),
)


def _basic_credentials(value: str) -> bool:
    """An ``Authorization: Basic`` value: base64 of printable ``user:password``."""
    import base64
    import binascii

    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()


def _bearer_token(value: str) -> bool:
    """A bearer value, not a word ("bearer authentication"): letters and digits mixed."""
    return any(ch.isdigit() for ch in value) and any(ch.isalpha() for ch in value)


@dataclass(frozen=True)
class Shape:
    """A key shape memagent knows itself (detect-secrets has no plugin for it)."""

    kind: str
    slug: str
    source: str
    hints: tuple[str, ...]
    group: int = 0
    check: str = ""  # "" | "basic" | "bearer": a further test of the value

    def findings(self, text: str, lowered: str) -> Iterator[tuple[str, str, Span]]:
        if not any(hint in lowered for hint in self.hints):
            return
        for match in re.finditer(self.source, text):
            start, end = match.span(self.group)
            if start == end or (self.group == 0 and not _at_boundary(text, start)):
                continue
            if self.check and not _CHECKS[self.check](match.group(self.group)):
                continue
            yield self.kind, self.slug, _extend(text, start, end, TOKEN_CHARS if self.group == 0 else NO_EXTENSION)


_CHECKS = {"basic": _basic_credentials, "bearer": _bearer_token}

SHAPES: tuple[Shape, ...] = (
    Shape("Anthropic API key", "anthropic-key", r"sk-ant-[A-Za-z0-9_\-]{16,}", ("sk-ant-",)),
    Shape("OpenAI API key", "openai-key", r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{16,}", ("sk-",)),
    Shape("OpenAI API key", "openai-key", r"sk-(?!ant-)[A-Za-z0-9]{20,}", ("sk-",)),
    Shape("GitHub token", "github-token", r"github_pat_[A-Za-z0-9_]{22,}", ("github_pat_",)),
    Shape("npm token", "npm-token", r"npm_[A-Za-z0-9]{36}", ("npm_",)),
    Shape("Hugging Face token", "huggingface-token", r"hf_[A-Za-z0-9]{30,}", ("hf_",)),
    Shape("Google API key", "google-api-key", r"AIza[0-9A-Za-z_\-]{35}", ("aiza",)),
    Shape("Google OAuth client secret", "google-oauth-secret", r"GOCSPX-[A-Za-z0-9_\-]{20,}", ("gocspx-",)),
    Shape("Azure SAS signature", "azure-sas", r"(?i)[?&]sig=([A-Za-z0-9%/+=]{20,})", ("sig=",), group=1),
    Shape(
        "Authorization bearer token",
        "bearer-token",
        r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{12,}=*)",
        ("bearer",),
        group=1,
        check="bearer",
    ),
    Shape(
        "Authorization basic credentials",
        "basic-auth",
        r"(?i)\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])",
        ("basic",),
        group=1,
        check="basic",
    ),
    Shape("Mailgun API key", "mailgun-key", r"key-[0-9a-f]{32}", ("key-",)),
    Shape(
        "Discord webhook",
        "discord-webhook",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+",
        ("discord",),
    ),
    Shape(
        "Shopify token",
        "shopify-token",
        r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}",
        ("shpat_", "shpss_", "shpca_", "shppa_"),
    ),
    Shape(
        "Square access token",
        "square-token",
        r"(?:sq0atp-[0-9A-Za-z_\-]{22}|EAAA[A-Za-z0-9_\-]{60})",
        ("sq0atp-", "eaaa"),
    ),
    Shape("DigitalOcean token", "digitalocean-token", r"do[opr]_v1_[a-f0-9]{64}", ("_v1_",)),
    Shape("Heroku API key", "heroku-key", r"HRKU-[A-Za-z0-9_\-]{20,}", ("hrku-",)),
    Shape(
        "Heroku API key",
        "heroku-key",
        r"(?i)heroku[\w .-]{0,20}?(?:key|token|secret)\w*['\"]?\s*[=:]\s*['\"]?"
        r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})",
        ("heroku",),
        group=1,
    ),
    Shape("Databricks token", "databricks-token", r"dapi[a-f0-9]{32}(?:-\d)?", ("dapi",)),
    Shape(
        "Datadog API key",
        "datadog-key",
        r"(?i)(?:datadog|\bdd)[\w .-]{0,20}?(?:api|app|application)[_-]?key['\"]?\s*[=:]\s*['\"]?"
        r"([a-f0-9]{40}|[a-f0-9]{32})(?![a-f0-9])",
        ("datadog", "dd_a", "dd-a", "ddapi", "ddapp"),
        group=1,
    ),
    Shape(
        "Sentry DSN key",
        "sentry-dsn",
        r"\bhttps?://([0-9a-f]{32})(?::[0-9a-f]{32})?@[A-Za-z0-9.\-]+(?::\d+)?/\d+",
        ("://",),
        group=1,
    ),
    Shape(
        "Mapbox token",
        "mapbox-token",
        r"(?:pk|sk|tk)\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
        ("pk.eyj", "sk.eyj", "tk.eyj"),
    ),
    Shape(
        "AWS secret access key",
        "aws-secret-key",
        r"(?i)aws.{0,24}?(?:secret|key).{0,16}?[=:]\s*['\"]?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        ("aws",),
        group=1,
    ),
)

# Private key blocks: detect-secrets' PrivateKeyDetector knows the header lines; the block runs
# to its END line (or to the end of the text, when it was cut).
_BLOCK_END = r"-----END [A-Z0-9 ]*(?:PRIVATE KEY|KEY BLOCK)[A-Z ]*-----|---- END SSH2 ENCRYPTED PRIVATE KEY ----"
_PUTTY_END = r"Private-MAC: *[0-9a-fA-F]+"
_ANY_BEGIN = r"BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY"  # also ENCRYPTED, which the plugin lacks


def key_blocks(text: str, lowered: str) -> Iterator[tuple[str, str, Span]]:
    """Every private key block: from its BEGIN line to its END line, or to the end of the text."""
    if "private key" not in lowered and "putty-user-key" not in lowered:
        return
    plugin = _plugin("private_key:PrivateKeyDetector")
    for regex in (*plugin.denylist, re.compile(_ANY_BEGIN)):
        for match in regex.finditer(text):
            start = text.rfind("-----", 0, match.start())
            start = start if start >= 0 and match.start() - start <= 10 else match.start()
            putty = match.group(0).startswith("PuTTY")
            end_match = re.compile(_PUTTY_END if putty else _BLOCK_END).search(text, match.end())
            yield "private key block", "private-key", (start, end_match.end() if end_match else len(text))


__all__ = ["PLUGINS", "Plugin", "SHAPES", "Shape", "key_blocks"]
