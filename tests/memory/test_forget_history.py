"""Forget reaches the learning history too, and `memory show` / `memory stats` render it."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from memagent.cli.main import app
from memagent.memory.learning_history import LearningHistory, history_for


def test_forget_erases_the_cards_text_from_the_learning_history(paths, open_service):
    service = open_service()
    content = "Deploys go through the staging cluster named heron-west before production"
    saved = service.save(content, "procedure", confidence=0.9)
    assert saved.ok
    history = LearningHistory.for_paths(paths)
    history.append(
        {"kind": "decision", "action": "ADD", "card_id": saved.card.id, "content": content, "reason": "test"},
        scope="project",
    )
    assert history_for(paths, saved.card.id)
    service.forget([saved.card.id])
    service.close()
    needle = b"heron-west"
    for root in (paths.memory, paths.user_memory):
        for file in root.rglob("*") if root.exists() else ():
            if file.is_file():
                assert needle not in file.read_bytes(), file


def test_show_renders_history_and_stats_include_learning(paths, open_service):
    service = open_service()
    saved = service.save("The team reviews pull requests within one working day", "habit", confidence=0.9)
    LearningHistory.for_paths(paths).append(
        {"kind": "decision", "action": "ADD", "card_id": saved.card.id, "reason": "extracted"}, scope="project"
    )
    service.close()
    runner = CliRunner()
    shown = runner.invoke(app, ["memory", "show", saved.card.id, "-C", str(paths.root)])
    assert shown.exit_code == 0, shown.output
    assert "History:" in shown.output and "ADD" in shown.output
    stats = runner.invoke(app, ["memory", "stats", "--json", "-C", str(paths.root)])
    data = json.loads(stats.output)
    assert data["learning"]["decisions"] == {"ADD": 1}
    assert data["by_source"] == {"assistant": 1}
    assert data["stores"]["project"]["size_bytes"] > 0


def test_injected_block_flags_a_card_whose_file_is_gone(paths, open_service):
    (paths.root / "setup.cfg").write_text("[tool]\n")
    service = open_service()
    service.save(
        "The linters are configured in setup.cfg and run through tox", "fact", confidence=0.9, files=["setup.cfg"]
    )
    fresh = service.context_for_turn("where are the linters configured for tox?")
    assert "setup.cfg" in fresh and "stale" not in fresh
    (paths.root / "setup.cfg").unlink()
    gone = service.context_for_turn("where are the linters configured for tox?")
    assert "[stale: setup.cfg no longer exists]" in gone
