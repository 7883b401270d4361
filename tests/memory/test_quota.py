"""``memory_max_cards``: at the quota the lowest-value cards are archived (never dropped), the
save says so, and every process counts the same cards (the catalog on disk)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from fakeapi import FakeAnthropic, text, tool
from memagent.config import Settings
from memagent.memory.quota import over_quota

LEXICAL = {"MEMAGENT_EMBEDDER": "lexical"}


def _entry(card_id, confidence=0.8, importance=0.5, source="assistant", status="active"):
    return SimpleNamespace(
        id=card_id,
        confidence=confidence,
        importance=importance,
        source=source,
        status=status,
        last_used_at=None,
        created_at=None,
    )


def test_the_lowest_value_go_first_and_the_users_words_and_use_count():
    entries = [
        _entry("weak", 0.7, 0.2),
        _entry("said", 0.7, 0.2, source="user"),
        _entry("used", 0.7, 0.2),
        _entry("strong", 0.95, 0.9),
        _entry("new", 0.7, 0.1),
        _entry("gone", status="archived"),
    ]
    assert over_quota(entries, 3, keep="new", uses={"used": 2}) == ["weak", "used"]
    assert over_quota(entries, 3, keep="new", uses={"used": 8}) == ["weak", "said"]  # much use outweighs
    assert over_quota(entries, 10, keep="new") == [] and over_quota(entries, 0, keep="new") == []


def test_at_the_quota_a_save_archives_the_lowest_value_card_and_says_so(open_service):
    service = open_service("s", settings=Settings(memory_max_cards=2))
    low = service.save("The old staging host was called ember.", "fact", confidence=0.7, importance=0.1).card
    high = service.save("Releases are cut from the main branch every Friday.", "procedure", confidence=0.95).card
    third = service.save("The API speaks JSON over HTTP/2 only.", "fact", confidence=0.9)
    assert third.status == "added" and "archived 1 lowest-value memory" in third.reason and low.id in third.reason
    assert service.get(low.id).status == "archived"  # kept on disk, out of use
    assert {c.id for c in service.list()} == {high.id, third.card.id}


@pytest.mark.timeout(600)  # real CLI runs: slow on a loaded machine
def test_print_runs_share_the_quota_and_the_model_is_told(run_cli, project):
    (project / ".memagent.toml").write_text("memory_max_cards = 2\nauto_extract = false\n")
    assert run_cli("trust", "-C", str(project)).returncode == 0
    facts = [
        "The build uses Bazel 7 with remote caching.",
        "The docs site is built with MkDocs Material.",
        "Deploys go through Argo CD from the gitops repo.",
    ]
    outputs = []
    for fact in facts:
        with FakeAnthropic() as fake:
            fake.add(tool("memory_save", {"content": fact, "memory_type": "fact", "confidence": 0.9}), text("Saved."))
            result = run_cli(
                "-C",
                str(project),
                "-p",
                f"Please remember: {fact}",
                "--yes",
                env={"ANTHROPIC_BASE_URL": fake.url, **LEXICAL},
                timeout=180,
            )
            assert result.returncode == 0, result.stderr
            outputs.append(json.dumps(fake.requests[-1]["messages"][-1]))
    assert "memory_max_cards (2) reached" in outputs[2] and "memory_max_cards" not in outputs[1]
    listing = run_cli("-C", str(project), "memory", "list", "--json", env=LEXICAL)
    active = [c["content"] for c in json.loads(listing.stdout)]
    archived = run_cli("-C", str(project), "memory", "list", "--status", "archived", "--json", env=LEXICAL)
    assert len(active) == 2 and facts[2] in active
    assert len(json.loads(archived.stdout)) == 1
