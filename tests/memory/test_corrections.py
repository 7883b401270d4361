"""Corrections stick: a near-duplicate that changes a value, a date, a negation or a version
supersedes the old card (append-only); a restatement or paraphrase stays a no-op. Checked on the
pure rule, through the service, the `memory_save` tool and `memagent memory add`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from memagent.cli.main import app
from memagent.features.memory_tools import memory_tools
from memagent.memory.corrections import correction_kind
from memagent.tools.base import ToolContext, ToolRegistry

UPDATES = [
    ("The API request timeout is 30 seconds", "The API request timeout is 90 seconds", "value"),
    ("The project targets Python 3.11", "The project targets Python 3.12", "value"),
    ("The database listens on port 5432", "The database listens on port 6543", "value"),
    ("Deploying to production on Fridays is allowed", "Deploying to production on Fridays is forbidden", "opposite"),
    ("The team sync meeting is on Mondays", "The team sync meeting is on Thursdays", "date"),
    ("The release freeze starts on 2026-12-01", "The release freeze starts on 2026-12-15", "value"),
    ("Feature flags are cached in Redis", "Feature flags are not cached in Redis", "negation"),
]
RESTATEMENTS = [
    ("Run the unit tests with pytest before pushing", "Run the unit tests with pytest before pushing."),
    ("The API request timeout is 30 seconds", "The timeout of an API request is 30 seconds"),
    ("We deploy the backend with Argo CD", "The backend is deployed with Argo CD"),
]


@pytest.mark.parametrize("old, new, kind", UPDATES)
def test_the_rule_sees_each_kind_of_update(old, new, kind):
    assert correction_kind(old, new) == kind


@pytest.mark.parametrize("old, new", RESTATEMENTS)
def test_the_rule_keeps_restatements_as_no_ops(old, new):
    assert correction_kind(old, new) is None


def test_updates_supersede_and_restatements_merge_through_the_service(service):
    for old, new, _ in UPDATES:
        first = service.save(old, "fact")
        assert first.status == "added", (old, first.reason)
        second = service.save(new, "fact")
        assert second.status == "superseded", (new, second.reason)
        assert second.card.supersedes == first.card.id
        assert service.get(first.card.id).status == "superseded"
        assert service.get(first.card.id).superseded_by == second.card.id
    listed = {c.content for c in service.list(limit=100)}
    assert {new for _, new, _ in UPDATES} <= listed and not {old for old, _, _ in UPDATES[1:]} & listed
    restated = service.save(RESTATEMENTS[0][0], "procedure", provenance={"turn": 1})
    again = service.save(RESTATEMENTS[0][1], "procedure", provenance={"turn": 7})
    assert again.status == "duplicate" and again.card.id == restated.card.id
    kept = service.get(restated.card.id)
    assert [p.turn for p in kept.merged_from] == [7]  # a merge keeps every provenance


def test_a_correction_through_the_memory_save_tool(service, paths):
    registry = ToolRegistry.of(memory_tools(lambda: service))
    ctx = ToolContext(root=paths.root, session_id="sess-1")
    first = registry.run(
        "memory_save", {"content": "The staging deploy window opens at 14:00", "memory_type": "fact"}, ctx
    )
    old_id = first.content.split("[Memory#")[1].split("]")[0]
    second = registry.run(
        "memory_save", {"content": "The staging deploy window opens at 16:00", "memory_type": "fact"}, ctx
    )
    assert not second.is_error and f"supersedes [Memory#{old_id}]" in second.content
    same = registry.run(
        "memory_save", {"content": "The staging deploy window opens at 16:00.", "memory_type": "fact"}, ctx
    )
    assert "Already remembered" in same.content


def test_a_correction_through_the_cli(paths, embedder, monkeypatch):
    monkeypatch.setattr("memagent.embedding.embedders.load_embedder", lambda *a, **k: embedder)
    runner = CliRunner()

    def add(text: str) -> dict:
        result = runner.invoke(app, ["memory", "add", text, "--json", "-C", str(paths.root)])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    first = add("Deploying to production on Fridays is allowed")
    second = add("Deploying to production on Fridays is forbidden")
    assert second["status"] == "superseded" and second["card"]["supersedes"] == first["card"]["id"]
    listed = runner.invoke(app, ["memory", "list", "--json", "-C", str(paths.root)])
    assert [c["content"] for c in json.loads(listed.stdout)] == ["Deploying to production on Fridays is forbidden"]
