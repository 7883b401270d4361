"""The write gate: secrets (each kind), length, confidence, duplicates, rate limit — and that
nothing refused reaches the disk."""

from __future__ import annotations

import pytest

from memagent.memory.cards import MemoryCard, Provenance
from memagent.memory.gate import GateConfig, check_card, term_overlap
from memagent.memory.secrets import find_secrets, redact, secret_kinds

# Fake credentials are assembled at run time so that no scanner mistakes this file for a leak.
A = "a1B2c3D4e5F6g7H8i9J0"
SECRETS = {
    "Anthropic API key": "use sk-" + "ant-api03-" + A + A + " for the proxy",
    "OpenAI API key": "OPENAI key is sk-" + "proj-" + A + A,
    "OpenAI API key (legacy)": "key sk-" + "T3BlbkFJ" + A,
    "AWS access key id": "the access key is AKIA" + "IOSFODNN7EXAMPLE",
    "AWS secret access key": "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "GitHub token": "push with gh" + "p_" + A + A[:16],
    "GitHub fine-grained token": "token github_" + "pat_11ABCDEFG0" + A + A,
    "Slack token": "bot xo" + "xb-1234567890-" + A,
    "Google API key": "maps key AI" + "za" + "SyD-" + A + "abcdefghijklm",
    "JSON Web Token": "auth header eyJ"
    + "hbGciOiJIUzI1NiJ9.eyJ"
    + "zdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "private key block": "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEow...\n-----END RSA PRIVATE KEY-----",
    "password or secret assignment": "the staging db uses password=" + "Tr0ub4dor&3",
    "password or secret assignment (yaml)": "config has passwd: " + "s3cr3tPass",
    "password or secret assignment (prefixed)": "settings.py sets DB_PASSWORD = '" + "s3cr3tPass'",
    "password or secret assignment (long word)": "wifi password: " + "correcthorsebattery",
    "password or secret assignment (mixed case)": "admin pwd = " + "hunTer",
    ".env secret line": "the .env has\nSTRIPE_API_KEY=" + "rk_live_" + A,
    "connection string with a password": "connect to postgres://admin:" + "hunter22" + "@db.internal:5432/app",
}
EXPECTED_KIND = {name: name.split(" (")[0] for name in SECRETS}
EXPECTED_KIND["GitHub fine-grained token"] = "GitHub token"


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_each_secret_kind_is_found_and_named(name):
    text = SECRETS[name]
    kinds = secret_kinds(text)
    assert EXPECTED_KIND[name] in kinds


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_gate_refuses_secrets_without_echoing_them(name):
    card = MemoryCard(content=SECRETS[name], confidence=0.9)
    reason = check_card(card, GateConfig())
    assert reason is not None and "secret" in reason
    assert EXPECTED_KIND[name] in reason
    for finding in find_secrets(SECRETS[name]):
        assert SECRETS[name][finding.start : finding.end] not in reason


@pytest.mark.parametrize(
    "text",
    [
        "Tokens are refreshed by the auth middleware every hour",
        "The password reset flow lives in accounts/views.py",
        "Set DATABASE_URL=$DATABASE_URL in CI, never commit it",
        "The API key is stored in the macOS keychain under 'memagent'",
        "password: <ask the user>",
        "Use https://docs.python.org/3/library/sqlite3.html for sqlite docs",
        "skip-worktree is how we hide local config changes",
        "password: must be at least 12 characters long",
        "The session token: expires after one hour",
        "secret = Nothing, the repo is public",
    ],
)
def test_ordinary_text_is_not_a_secret(text):
    assert secret_kinds(text) == []


def test_redact_masks_every_finding():
    text = SECRETS["GitHub token"] + " and " + SECRETS["connection string with a password"]
    masked = redact(text)
    assert "hunter22" not in masked and "gh" + "p_" not in masked
    assert masked.count("[REDACTED]") == 2


def test_secret_in_other_fields_is_refused():
    card = MemoryCard(
        content="The deploy script needs a token from the vault",
        provenance=Provenance(quote="here it is: " + SECRETS["GitHub token"]),
    )
    reason = check_card(card, GateConfig())
    assert reason is not None and "GitHub token" in reason and "quote" in reason


@pytest.mark.parametrize(
    ("content", "confidence", "expected"),
    [
        ("abc", 0.9, "too short"),
        ("x" * 2001, 0.9, "too long"),
        ("Use ruff for linting", 0.5, "confidence 0.50 is below the minimum 0.70"),
        ("Use ruff for linting", 0.7, None),
        ("x" * 2000, 0.9, None),
        ("12345", 0.9, None),
    ],
)
def test_length_and_confidence_limits(content, confidence, expected):
    reason = check_card(MemoryCard(content=content, confidence=confidence), GateConfig())
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and expected in reason


def test_limits_are_configurable():
    config = GateConfig(min_confidence=0.2, max_chars=10)
    assert check_card(MemoryCard(content="short one", confidence=0.3), config) is None
    assert "too long" in check_card(MemoryCard(content="much longer than ten", confidence=0.3), config)


def test_term_overlap():
    assert term_overlap(["a", "b"], ["a", "b"]) == 1.0
    assert term_overlap(["a", "b"], ["c"]) == 0.0
    assert term_overlap([], []) == 0.0
    assert term_overlap(["a", "b", "c"], ["a", "b", "d"]) == pytest.approx(0.5)


# -- through the service --------------------------------------------------------------------


def test_refused_saves_never_touch_disk(service, paths):
    for content, confidence in ((SECRETS["Anthropic API key"], 0.9), ("tiny", 0.9), ("Use ruff for lint", 0.1)):
        result = service.save(content, "fact", confidence=confidence)
        assert result.status == "refused" and result.card is None and result.reason
    assert service.save("Prefers dark mode", "preference", "user", confidence=0.1).status == "refused"
    assert not paths.memory.exists()
    assert not paths.user_memory.exists()


def test_near_duplicate_returns_existing_card_and_merges(service):
    first = service.save("Run the test suite with pytest -n 4", "procedure", confidence=0.8, files=["pytest.ini"])
    again = service.save("Run the test suite with pytest -n 4.", "procedure", confidence=0.95, files=["tox.ini"])
    assert first.status == "added"
    assert again.status == "duplicate" and again.card.id == first.card.id
    assert "near-duplicate" in again.reason and first.card.id in again.reason
    stored = service.get(first.card.id)
    assert stored.confidence == 0.95 and stored.files == ["pytest.ini", "tox.ini"]
    assert service.stats()["active"] == 1
    different = service.save("The staging server is deployed from the release branch", "fact")
    assert different.status == "added"


def test_near_duplicate_in_lexical_only_mode(open_service, lexical_embedder):
    service = open_service(embedder=lexical_embedder)
    first = service.save("Deploys go through the release branch on Fridays", "decision")
    dup = service.save("deploys go through the release branch on fridays!", "decision")
    other = service.save("Database migrations run with alembic upgrade head", "procedure")
    assert first.status == "added" and other.status == "added"
    assert dup.status == "duplicate" and dup.card.id == first.card.id


def test_rate_limit_applies_to_automatic_writes_only(open_service):
    service = open_service(gate=GateConfig(max_auto_writes_per_session=2))
    topics = ["Python 3.12 is the minimum version", "Docs are built with mkdocs", "Releases are tagged vX.Y.Z"]
    results = [service.save(t, "fact", auto=True) for t in topics]
    assert [r.status for r in results] == ["added", "added", "refused"]
    assert "rate limit" in results[2].reason
    assert service.save("The CLI entry point is memagent.cli.main:run", "fact").status == "added"
