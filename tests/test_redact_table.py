"""The key shapes and personal-data kinds, table-driven: every one is found and replaced by a
placeholder naming it, and a corpus of ordinary code and text (hashes, UUIDs, base64 test data,
versions, timestamps, phone-like numbers in code) is left exactly as it was.

Every value is fake and assembled at run time (no scanner mistakes this file for a leak)."""

from __future__ import annotations

import base64
import json
import random
import string

import pytest

from memagent.redact import find_personal_data, find_secrets, find_sensitive, redact

LOWER_HEX = "0123456789abcdef"
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"


def fake(alphabet: str, n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


def b64url(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


JWT = (
    b64url({"alg": "HS256", "typ": "JWT"})
    + "."
    + b64url({"sub": "1234567890", "name": "x"})
    + "."
    + fake(URLSAFE, 43, 1)
)
BASIC = base64.b64encode(b"alice:" + fake(ALNUM, 14, 2).encode()).decode()


def key_block(label: str, seed: int) -> str:
    body = "\n".join(fake(ALNUM + "+/", 64, seed + i) for i in range(4))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


# (name, text holding the secret, the secret value, the expected slug)
SHAPES = [
    ("Anthropic", "key: {v}", "sk-" + "ant-api03-" + fake(URLSAFE, 93, 3), "anthropic-key"),
    ("OpenAI project", "OPENAI={v}", "sk-" + "proj-" + fake(URLSAFE, 120, 4), "openai-key"),
    ("OpenAI legacy", "use {v} here", "sk-" + fake(ALNUM, 20, 5) + "T3Blb" + "kFJ" + fake(ALNUM, 20, 6), "openai-key"),
    (
        "AWS access key id",
        "aws id {v}",
        "AKIA" + fake(string.ascii_uppercase + string.digits, 16, 7),
        "aws-access-key-id",
    ),
    ("AWS secret key", "aws_secret_access_key = {v}", fake(ALNUM + "/+", 40, 8), "aws-secret-key"),
    ("GitHub ghp_", "token {v}", "gh" + "p_" + fake(ALNUM, 36, 9), "github-token"),
    ("GitHub gho_", "token {v}", "gh" + "o_" + fake(ALNUM, 36, 10), "github-token"),
    ("GitHub ghs_", "token {v}", "gh" + "s_" + fake(ALNUM, 36, 11), "github-token"),
    ("GitHub ghu_", "token {v}", "gh" + "u_" + fake(ALNUM, 36, 12), "github-token"),
    (
        "GitHub fine-grained",
        "token {v}",
        "github" + "_pat_" + fake(ALNUM, 22, 13) + "_" + fake(ALNUM, 59, 14),
        "github-token",
    ),
    ("GitLab", "push with {v}", "gl" + "pat-" + fake(URLSAFE, 20, 15), "gitlab-token"),
    (
        "Slack bot",
        "slack {v}",
        "xo" + "xb-" + "1234567890123-1234567890123-" + fake(string.ascii_lowercase + string.digits, 24, 16),
        "slack-token",
    ),
    (
        "Slack user",
        "slack {v}",
        "xo" + "xp-" + "1234567890-2345678901-3456789012-" + fake(LOWER_HEX, 32, 17),
        "slack-token",
    ),
    (
        "Slack webhook",
        "post to {v}",
        "https://hooks.slack"
        + ".com/services/T0"
        + fake(string.ascii_uppercase, 8, 18)
        + "/B0"
        + fake(string.ascii_uppercase, 8, 19)
        + "/"
        + fake(ALNUM, 24, 20),
        "slack-webhook",
    ),
    ("Stripe secret", "stripe {v}", "sk" + "_live_" + fake(ALNUM, 99, 21), "stripe-key"),
    ("Stripe restricted", "stripe {v}", "rk" + "_live_" + fake(ALNUM, 99, 22), "stripe-key"),
    ("Twilio", "twilio {v}", "SK" + fake(LOWER_HEX, 32, 23), "twilio-key"),
    ("SendGrid", "sendgrid {v}", "SG." + fake(URLSAFE, 22, 24) + "." + fake(URLSAFE, 43, 25), "sendgrid-key"),
    ("Mailgun", "mailgun {v}", "key-" + fake(LOWER_HEX, 32, 26), "mailgun-key"),
    ("npm", "publish with {v}", "np" + "m_" + fake(ALNUM, 36, 27), "npm-token"),
    ("PyPI", "upload {v}", "pypi-" + "AgEIcHlwaS5vcmc" + fake(URLSAFE, 120, 28), "pypi-token"),
    ("Hugging Face", "hub {v}", "hf" + "_" + fake(string.ascii_letters, 34, 29), "huggingface-token"),
    ("Google API key", "maps {v}", "AI" + "za" + fake(URLSAFE, 35, 30), "google-api-key"),
    ("Google OAuth secret", "client_secret {v}", "GOC" + "SPX-" + fake(URLSAFE, 28, 31), "google-oauth-secret"),
    (
        "Azure AccountKey",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={v};EndpointSuffix=core.windows.net",
        fake(ALNUM + "+/", 86, 32) + "==",
        "azure-storage-key",
    ),
    (
        "Azure SAS",
        "https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&sr=b&sig={v}",
        fake(ALNUM, 40, 33) + "%3D",
        "azure-sas",
    ),
    ("JWT", "cookie {v}", JWT, "jwt"),
    ("RSA private key", "key:\n{v}\nend", key_block("RSA " + "PRIVATE KEY", 40), "private-key"),
    ("EC private key", "{v}", key_block("EC " + "PRIVATE KEY", 50), "private-key"),
    ("OpenSSH private key", "{v}", key_block("OPENSSH " + "PRIVATE KEY", 60), "private-key"),
    ("PGP private key", "{v}", key_block("PGP " + "PRIVATE KEY BLOCK", 70), "private-key"),
    (
        "Authorization Bearer",
        "curl -H 'Authorization: Bearer {v}' https://api",
        fake(ALNUM, 30, 80) + "9",
        "bearer-token",
    ),
    ("Authorization Basic", "Authorization: Basic {v}", BASIC, "basic-auth"),
    (
        "password in a URL",
        "DATABASE_URL is postgres://app:{v}@db.internal:5432/app",
        "s3cret" + fake(ALNUM, 6, 81),
        "connection-password",
    ),
    (".env secret", "PAYMENT_SECRET={v}", fake(ALNUM, 24, 82), "env-secret"),
    (".env password (short name)", "DB_PW={v}", "dbpw-" + fake(ALNUM, 12, 197), "env-secret"),
    (".env credentials", "export APP_CREDS={v}", "creds-" + fake(ALNUM, 12, 198), "env-secret"),
    ("password assignment", 'password = "{v}"', "hunter2-" + fake(ALNUM, 8, 83), "password"),
    (
        "Discord bot token",
        "bot {v}",
        "M" + fake(URLSAFE, 23, 84) + "." + fake(URLSAFE, 6, 85) + "." + fake(URLSAFE, 27, 86),
        "discord-token",
    ),
    (
        "Discord webhook",
        "notify {v}",
        "https://discord" + ".com/api/webhooks/123456789012345678/" + fake(URLSAFE, 68, 87),
        "discord-webhook",
    ),
    ("Telegram bot token", "bot {v}", "123456789:" + "AA" + fake(URLSAFE, 33, 88), "telegram-token"),
    ("Shopify", "shop {v}", "shp" + "at_" + fake(LOWER_HEX, 32, 89), "shopify-token"),
    ("Square OAuth secret", "square {v}", "sq0" + "csp-" + fake(URLSAFE, 43, 90), "square-secret"),
    ("Square access token", "square {v}", "EA" + "AA" + fake(URLSAFE, 60, 91), "square-token"),
    ("DigitalOcean", "doctl {v}", "do" + "p_v1_" + fake(LOWER_HEX, 64, 92), "digitalocean-token"),
    ("Heroku", "heroku {v}", "HR" + "KU-" + fake(URLSAFE, 60, 93), "heroku-key"),
    ("Databricks", "databricks {v}", "da" + "pi" + fake(LOWER_HEX, 32, 94), "databricks-token"),
    ("Datadog", 'datadog_api_key: "{v}"', fake(LOWER_HEX, 32, 95), "datadog-key"),
    ("Sentry DSN", "dsn {v}@o123456.ingest.sentry.io/4505", "https://" + fake(LOWER_HEX, 32, 96), "sentry-dsn"),
    (
        "Mapbox",
        "mapbox {v}",
        "pk.ey" + "J1IjoiYWNtZSIsImEiOiJ" + fake(ALNUM, 20, 97) + "." + fake(URLSAFE, 22, 98),
        "mapbox-token",
    ),
    ("prose password", "the deploy password is {v}", "Tr0ub4dor-" + "prod-99", "password"),
]


@pytest.mark.parametrize(("name", "template", "value", "slug"), SHAPES, ids=[s[0] for s in SHAPES])
def test_every_key_shape_is_redacted_and_named(name, template, value, slug):
    text = template.format(v=value)
    findings = find_secrets(text)
    assert findings, name
    out = redact(text)
    secret_core = value.split("https://")[-1]  # a Sentry DSN keeps its scheme
    assert secret_core not in out
    assert f"[REDACTED:{slug}]" in out, out
    # the words around the secret are kept
    before = template.split("{v}")[0]
    assert out.startswith(before[: max(0, len(before) - 10)])


def test_there_are_at_least_36_key_shapes():
    assert len(SHAPES) >= 36 and len({s[3] for s in SHAPES}) >= 30


# (name, text, the personal data inside, slug)
PERSONAL = [
    ("e-mail", "write to alice.martin@acme-corp.io today", "alice.martin@acme-corp.io", "email"),
    ("e-mail with plus", "cc: bob+ci@mail.acme.co.uk.", "bob+ci@mail.acme.co.uk", "email"),
    ("phone, international", "call +1 415-555-0132 tomorrow", "+1 415-555-0132", "phone"),
    ("phone, national", "my number is (415) 555-0132", "(415) 555-0132", "phone"),
    ("phone, UK", "office +44 20 7946 0958", "+44 20 7946 0958", "phone"),
    ("payment card, grouped", "card 4111 1111 1111 1111 exp 12/29", "4111 1111 1111 1111", "payment-card"),
    ("payment card, Amex bare", "amex 378282246310005", "378282246310005", "payment-card"),
    ("payment card, dashes", "mc 5555-5555-5555-4444", "5555-5555-5555-4444", "payment-card"),
    ("IBAN, grouped", "pay to GB82 WEST 1234 5698 7654 32 please", "GB82 WEST 1234 5698 7654 32", "iban"),
    ("IBAN, compact", "IBAN: DE89370400440532013000", "DE89370400440532013000", "iban"),
]


@pytest.mark.parametrize(("name", "text", "value", "slug"), PERSONAL, ids=[p[0] for p in PERSONAL])
def test_personal_data_is_redacted_and_named(name, text, value, slug):
    found = find_personal_data(text)
    assert [text[f.start : f.end] for f in found] == [value]
    out = redact(text)
    assert value not in out and f"[REDACTED:{slug}]" in out


SHA = fake(LOWER_HEX, 40, 200)
ORDINARY = [
    f"commit {SHA}\nAuthor: dev\n\n    fix the parser",
    f"git checkout {SHA[:12]} && git log --oneline -3",
    "request id 550e8400-e29b-41d4-a716-446655440000 took 12 ms",
    'PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")',
    'FIXTURE = "SGVsbG8sIHdvcmxkISBUaGlzIGlzIGp1c3QgdGVzdCBkYXRhLg=="',
    "requires anthropic>=2.11.0, pydantic==2.14.1 and v3.0.0-rc.1",
    "2026-11-20T10:04:05.123456Z INFO started in 0.532 s (pid 48213)",
    "Nov 25 09:48:12 host sshd[1234]: Accepted publickey for dev from 192.168.100.200 port 52144",
    "timestamp 1732530000 ns 1732530000123456789 offset 415-555",
    "MAX_RETRIES = 5\nTIMEOUTS = [100, 200, 400, 800]\nPORT = 5432\nBIG = 4155550132",
    '  File "app.py", line 1234, in handler\n    return call(123, 456, 7890)',
    "ISBN 978-3-16-148410-0, ticket #4111, build 2024.11.25.1, zip 94105-1234",
    "x = 1e-10; y = 0x80070005; dates = ['12/31/2024', '2024-01-15']",
    "--hash=sha256:" + fake(LOWER_HEX, 64, 201),
    "FROM python@sha256:" + fake(LOWER_HEX, 64, 202),
    "lodash@4.17.21 and @types/node@20.11.5",
    "@app.route('/users/<int:user_id>')\ndef show(user_id): ...",
    "git clone git@github.com:acme/app.git && ssh://git@gitlab.com/acme/app.git",
    "send it to user@example.com or test@localhost (fixtures)",
    "Stripe publishable key pk_live_" + fake(ALNUM, 24, 203) + " goes in the page",
    "Bearer authentication is required; use Basic authentication for the proxy",
    "Authorization: Bearer ${API_TOKEN}",
    "The token is refreshed by the auth middleware every hour",
    "token = tokens[i]\npassword = request.form.get('password')\nMAX_TOKENS = 256",
    "PATH=/usr/local/bin:/usr/bin:/bin\nBYPASS_CACHE=true\nKEYBOARD=us",
    "md5 " + fake(LOWER_HEX, 32, 204) + " sha1 " + fake(LOWER_HEX, 40, 205),
    "4111 1111 1111 1112 is not a card (Luhn) and 1234 5678 9012 3456 neither",
    "scikit-learn (sk-learn) and key-value stores",
    "        token = match.group(1) or match.group(2)",
    'EOF_KEY = "\\x04"  # Ctrl-D',
    '{"headers": {"Authorization": "Bearer ${API_TOKEN:-none}"}}',
    "the URL has the form https://user:pass@host:port/path",
    "DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_code_and_text_is_left_alone(text):
    assert find_sensitive(text) == [], [text[f.start : f.end] for f in find_sensitive(text)]
    assert redact(text) == text


def test_a_stripe_key_longer_than_the_plugin_pattern_is_redacted_whole():
    key = "sk" + "_live_" + fake(ALNUM, 99, 300)
    out = redact(f"STRIPE={key}")
    assert out == "STRIPE=[REDACTED:stripe-key]"


def test_a_key_inside_a_longer_word_is_not_a_key():
    text = "x" + "AKIA" + fake(string.ascii_uppercase, 16, 301) + "Y"
    assert find_secrets(text) == []
