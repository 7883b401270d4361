"""Suite-wide isolation: no test touches the real user dir, a real key or the network."""

from __future__ import annotations

import pytest

pytest_plugins = ["fakeapi.fixtures", "memory_fixtures"]


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory, monkeypatch):
    """Point MEMAGENT_HOME at a temp dir and remove every variable that could reach a real API."""
    home = tmp_path_factory.mktemp("memagent-home")
    monkeypatch.setenv("MEMAGENT_HOME", str(home))
    monkeypatch.setenv("ORT_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")
    for var in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "MEMAGENT_MODEL",
        "MEMAGENT_SMALL_MODEL",
        "MEMAGENT_COMPACT_TOKENS",
        "MEMAGENT_CHROMA_URL",
    ):
        monkeypatch.delenv(var, raising=False)
    return home
