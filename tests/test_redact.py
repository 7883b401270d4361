"""The secret scanner and redaction: every kind found and replaced by a placeholder naming it,
prose-style secrets caught, ordinary prose and code left alone, streams redacted whole."""

from __future__ import annotations

import io

import pytest

from memagent.memory.cards import MemoryCard
from memagent.memory.gate import GateConfig, check_card
from memagent.redact import copy_redacted, find_secrets, redact, redact_value, secret_kinds

# Fake credentials are assembled at run time so that no scanner mistakes this file for a leak.
A = "a1B2c3D4e5F6g7H8i9J0"
ANTHROPIC = "sk-" + "ant-api03-" + A + A
GITHUB = "gh" + "p_" + A + A[:16]

# (text, the secret inside it, expected placeholder)
CASES = [
    (f"use {ANTHROPIC} for the proxy", ANTHROPIC, "[REDACTED:anthropic-key]"),
    (f"push with {GITHUB} please", GITHUB, "[REDACTED:github-token]"),
    ("the production deploy password is " + "Tr0ub4dor-prod-99", "Tr0ub4dor-prod-99", "[REDACTED:password]"),
    ("secret: " + "x9-Fq2-zz81", "x9-Fq2-zz81", "[REDACTED:password]"),
    ("my token is " + "tok_5f3a9c1b77", "tok_5f3a9c1b77", "[REDACTED:password]"),
    ("The password for the staging box is " + "hunter2-prod.", "hunter2-prod", "[REDACTED:password]"),
    ("the api key is `" + "Zq8Lw3Mn0Pv7`", "Zq8Lw3Mn0Pv7", "[REDACTED:password]"),
    ("     3\tSTRIPE_SECRET_KEY=" + "rk_live_" + A, "rk_live_" + A, "[REDACTED:env-secret]"),
    ("db at postgres://app:" + "s3cretpw" + "@db.internal/app", "s3cretpw", "[REDACTED:connection-password]"),
]


@pytest.mark.parametrize(("text", "secret", "placeholder"), CASES)
def test_redact_replaces_the_secret_with_its_kind(text, secret, placeholder):
    out = redact(text)
    assert secret not in out
    assert placeholder in out
    # the words around it survive
    assert out.split("[REDACTED")[0] == text.split(secret)[0]


def test_private_key_block_is_redacted_whole():
    body = "MIIEowIBAAKCAQEAx" + A
    text = "key:\n-----BEGIN RSA " + f"PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\ndone"
    out = redact(text)
    assert body not in out and out.endswith("[REDACTED:private-key]\ndone")
    unterminated = "-----BEGIN " + f"PRIVATE KEY-----\n{body}\n"
    assert body not in redact(unterminated)


@pytest.mark.parametrize(
    "text",
    [
        "The token is refreshed by the auth middleware every hour",
        "The password reset flow is documented in accounts/views.py",
        "the secret is unnecessary here",
        "The API key is stored in the macOS keychain under 'memagent'",
        "the password is required and must be at least 12 characters",
        "the token is 3600 seconds old",
        "The password is settings.DB_PASSWORD in production",
        "Our credentials are rotated by Vault every week",
        "A private key is needed to sign the release",
        "token = Nothing",
    ],
)
def test_ordinary_prose_is_left_alone(text):
    assert find_secrets(text) == []
    assert redact(text) == text


@pytest.mark.parametrize(
    "code",
    [
        "MAX_TOKENS = 256",
        "SUMMARY_MAX_TOKENS = 2_048",
        "MISSING_KEY = (",
        'SHELL_KEYWORDS = frozenset({"{", "}"})',
        '        api_key=env.get("ANTHROPIC_API_KEY") or None,',
        "self._auth_token = auth_token",
        "token = tokens[i]",
        "token = store.version_token()",
        'tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")',
        "settings.model, api_key=creds.api_key, auth_token=creds.auth_token",
        "SECRET_KEY = os.environ['SECRET_KEY']",
        "password = request.form.get('password')",
        "API_KEY = API_KEY_FROM_VAULT",
    ],
)
def test_source_code_is_not_mistaken_for_secrets(code):
    """Transcripts hold the code the agent read: it must stay as written."""
    assert find_secrets(code) == [] and redact(code) == code


def test_the_memory_gate_refuses_prose_secrets():
    card = MemoryCard(content="The production deploy password is " + "Tr0ub4dor-prod-99", confidence=0.95)
    reason = check_card(card, GateConfig())
    assert reason is not None and "secret" in reason and "Tr0ub4dor" not in reason
    assert secret_kinds(card.content) == ["password or secret in prose"]


def test_redact_value_walks_json_and_keeps_untouched_parts():
    clean = {"type": "text", "text": "nothing here"}
    value = [clean, {"type": "tool_use", "input": {"command": f"export K={ANTHROPIC}"}}]
    out = redact_value(value)
    assert out[0] is clean
    assert ANTHROPIC not in str(out) and "[REDACTED:anthropic-key]" in out[1]["input"]["command"]
    assert redact_value(clean) is clean


def test_copy_redacted_streams_without_cutting_secrets():
    lines = [f"line {n} ok\n".encode() for n in range(2000)]
    lines[700] = f"token={GITHUB}\n".encode()
    lines[1500] = b"-----BEGIN " + b"PRIVATE KEY-----\n"
    lines[1501] = b"QUJDREVGR0hJSktMTU5PUA" + A.encode() + b"\n"
    lines[1502] = b"-----END PRIVATE KEY-----\n"
    source = io.BytesIO(b"".join(lines) + b"\xff\xfe not utf-8 tail")
    target = io.BytesIO()
    copy_redacted(source, target, chunk_bytes=64)  # tiny chunks: every boundary is exercised
    out = target.getvalue()
    assert GITHUB.encode() not in out and b"QUJDREVGR0hJSktMTU5PUA" not in out
    assert out.count(b"[REDACTED:") == 2
    assert out.startswith(b"line 0 ok\n") and out.endswith(b"\xff\xfe not utf-8 tail")
    assert b"line 1999 ok\n" in out
