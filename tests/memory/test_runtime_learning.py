"""Learning as the session runs it (features.memory.open_memory): the review queue with
``require_review``, the task in progress on learned cards, and ``auto_extract = false``."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from memagent.cli import memory_learn
from memagent.config import Settings
from memagent.context.conversation import Conversation
from memagent.features.memory import open_memory
from memagent.llm.types import text_block
from memagent.memory.learning_history import learning_stats
from memory.learnkit import Fact


def _open(paths, settings, model, monkeypatch, embedder, warnings):
    import memagent.embedding.embedders as embeddings_module

    # the session loads its embedder lazily through this function; the suite's shared one is faster
    monkeypatch.setattr(embeddings_module, "load_embedder", lambda *args, **kwargs: embedder)
    opening = open_memory(
        paths,
        settings,
        "sess-r",
        model=model,
        record=lambda record: None,
        processed_ids=set(),
        current_task=lambda: "#3 switch the project to uv",
        warn=warnings.append,
    )
    assert opening.feature is not None, opening.off_reason
    return opening.feature


def _conversation(*turns: str) -> Conversation:
    conversation = Conversation()
    for turn in turns:
        conversation.append("user", [text_block(turn)])
        conversation.append("assistant", [text_block("Noted.")])
    return conversation


def test_learned_cards_wait_for_review_carry_the_task_and_the_runs_are_counted(
    brain, model, paths, embedder, monkeypatch, open_service
):
    brain.facts = [Fact("we use uv", "The project manages dependencies with uv.", "procedure")]
    warnings: list[str] = []
    feature = _open(paths, Settings(require_review=True, extract_every_turns=1), model, monkeypatch, embedder, warnings)
    feature.after_turn(_conversation("Notes: we use uv for everything."))
    feature.close()
    assert warnings == []

    (card,) = open_service().list(include_all=True, limit=10)
    assert (card.status, card.source, card.task_hint) == ("archived", "user", "#3 switch the project to uv")
    stats = learning_stats(paths)
    assert stats["extraction_runs"] >= 1 and stats["pending_review"] == 1
    app = typer.Typer(add_completion=False)
    app.command("review")(memory_learn.review_command)
    app.command("profile")(memory_learn.profile_command)  # two commands: "review" is a subcommand
    result = CliRunner().invoke(app, ["review", "-C", str(paths.root)], catch_exceptions=False)
    assert result.exit_code == 0 and card.id in result.output


def test_auto_extract_off_learns_nothing_periodically_before_a_compaction_or_at_exit(
    brain, model, paths, embedder, monkeypatch, open_service
):
    brain.facts = [Fact("we use uv", "The project manages dependencies with uv.", "procedure")]
    warnings: list[str] = []
    feature = _open(paths, Settings(auto_extract=False, extract_every_turns=1), model, monkeypatch, embedder, warnings)
    conversation = _conversation("Notes: we use uv for everything.", "And we deploy on Fridays.")
    feature.after_turn(conversation)
    feature.before_drop(conversation.messages, conversation.ids)
    feature.close()

    assert brain.extraction_prompts == []
    assert open_service().list(include_all=True, limit=10) == []
    assert learning_stats(paths)["extraction_runs"] == 0


def test_a_card_from_tool_output_is_searched_below_a_card_the_user_stated(service):
    said = service.save(
        "Deploys go out with make ship from the release branch.", "procedure", source="user", confidence=0.75
    ).card
    readme = service.save(
        "To deploy the service run make ship-it from main; deploys are automatic.",
        "procedure",
        source="tool",
        confidence=0.7,
    ).card
    hits = service.search("how do we deploy the service?", 5, min_score=0)
    ids = [h.card.id for h in hits]
    assert ids.index(said.id) < ids.index(readme.id)
    assert "from tool output, unverified" in service.context_for_turn("how do we deploy the service?")
