"""`memagent memory profile` and `memagent memory review`, mounted on a small typer app the way the
lead registers them on the `memory` app."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from memagent.cli import memory_learn
from memagent.memory.learning_history import LearningHistory
from memory.learnkit import Fact, learn_facts


@pytest.fixture
def cli(monkeypatch, embedder):

    monkeypatch.setattr("memagent.embedding.embedders.load_embedder", lambda *a, **k: embedder)
    app = typer.Typer(add_completion=False)
    app.command("profile")(memory_learn.profile_command)
    app.command("review")(memory_learn.review_command)
    runner = CliRunner()
    return lambda *args, **kw: runner.invoke(app, list(args), catch_exceptions=False, **kw)


def test_profile_json_and_text(cli, brain, make_pipeline, service, paths):
    assert "No profile yet" in cli("profile", "-C", str(paths.root)).output
    learn_facts(
        brain,
        make_pipeline,
        [
            Fact("I want answers in French", "The user wants answers in French.", "preference", scope="user"),
            Fact("deadline is Dec 15", "The project's beta deadline is 2026-12-15.", "constraint"),
            Fact(
                "chose SQLite for the cache",
                "The project chose SQLite for the local cache because it needs no server.",
                "decision",
            ),
        ],
    )
    service.close()
    result = cli("profile", "-C", str(paths.root), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert "The user wants answers in French." in data["user"]
    assert "Constraints:" in data["project"] and "2026-12-15" in data["project"]
    assert "Key decisions:" in data["project"] and "needs no server" in data["project"]
    assert data["user_cards"] == 1 and data["project_cards"] == 2
    text = cli("profile", "-C", str(paths.root)).output
    assert text.startswith("User profile (from long-term memory):")


def test_profile_respects_its_token_budget(service, paths):
    from memagent.memory.profiles import load_profiles

    topics = [
        "logging",
        "retries",
        "caching",
        "pagination",
        "auth tokens",
        "timeouts",
        "metrics",
        "feature flags",
        "migrations",
        "fixtures",
        "error codes",
        "naming of branches",
    ]
    for n, topic in enumerate(topics):
        service.save(
            f"Team convention for {topic}: follow the written guide in docs/{n}.md closely.",
            "preference",
            importance=0.4 + n / 20,
        )
    assert len(service.list()) == len(topics)
    profiles = load_profiles(service, paths, max_tokens=120)
    assert profiles.project is not None and len(profiles.project) <= 120 * 4
    assert "naming of branches" in profiles.project  # the most important comes first
    assert "logging" not in profiles.project


def test_review_without_a_terminal_lists_only(cli, brain, make_pipeline, service, paths):
    report = learn_facts(
        brain, make_pipeline, [Fact("we use uv", "The project manages dependencies with uv.", "procedure")]
    )
    service.close()
    result = cli("review", "-C", str(paths.root))
    assert result.exit_code == 0
    assert report.stored[0] in result.output
    assert "run `memagent memory review` in a terminal" in result.output


def test_review_interactive_keep_and_forget(cli, brain, make_pipeline, service, paths, monkeypatch):
    report = learn_facts(
        brain,
        make_pipeline,
        [
            Fact("we use uv", "The project manages dependencies with uv.", "procedure"),
            Fact("CI is slow on Mondays", "The CI of the project is slow on Mondays.", "fact"),
        ],
    )
    service.close()
    monkeypatch.setattr(memory_learn, "_interactive_terminal", lambda: True)
    result = cli("review", "-C", str(paths.root), input="k\nf\n")
    assert result.exit_code == 0, result.output
    assert "1 kept, 0 edited, 1 forgotten" in result.output
    verdicts = [r["verdict"] for r in LearningHistory.for_paths(paths).records("review")]
    assert sorted(verdicts) == ["forget", "keep"]
    result = cli("review", "-C", str(paths.root), "--json")
    assert json.loads(result.output) == []  # both reviewed
    assert len(report.stored) == 2
