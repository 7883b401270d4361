"""Event triggers: completing a task of the graph (or the whole todo list) learns once, at the
end of that turn, and the cards carry the task; ``memory list --task ID`` finds them."""

from __future__ import annotations

import json

import pytest

from fakeapi import FakeAnthropic, text, tool
from memagent.agent.feature import ToolCall
from memagent.config import Settings
from memagent.context.conversation import Conversation
from memagent.features.memory import open_memory
from memagent.llm.types import text_block
from memagent.memory.learning_history import LearningHistory
from memagent.memory.triggers import TASK_COMPLETED, TODO_COMPLETED, trigger_of
from memagent.tools.base import ToolOutcome
from memory.learnkit import Brain, Fact

LEXICAL = {"MEMAGENT_EMBEDDER": "lexical"}
UV = Fact("we always use uv", "The project manages dependencies with uv.", "procedure")


class _Brain(Brain):
    """The extraction rules of :class:`Brain`, and a scripted agent for everything else."""

    def __init__(self, facts, script):
        super().__init__(facts=facts)
        self.script = list(script)

    def __call__(self, body):
        answer = super().__call__(body)
        if answer["content"][0]["text"] == "unexpected request":
            return self.script.pop(0)
        return answer


@pytest.mark.timeout(600)  # real CLI runs: slow on a loaded machine
def test_completing_a_task_triggers_one_extraction_and_its_cards_carry_the_task(run_cli, project):
    brain = _Brain(
        [UV],
        [
            tool("task_create", {"subject": "Switch the project to uv"}),
            tool("task_update", {"task_id": 1, "status": "in_progress"}),
            tool("task_update", {"task_id": 1, "status": "completed"}),
            text("Switched; task #1 is done."),
        ],
    )
    with FakeAnthropic(responder=brain) as fake:
        result = run_cli(
            "-C",
            str(project),
            "-p",
            "Note: we always use uv. Switch the project to uv, as a task.",
            "--yes",
            env={"ANTHROPIC_BASE_URL": fake.url, **LEXICAL},
            timeout=180,
        )
        assert result.returncode == 0, result.stderr
        assert fake.errors == []
    assert len(brain.extraction_prompts) == 1  # the trigger mined it all: the session end found nothing new
    runs = [json.loads(line) for line in (project / ".memory" / "local" / "history.jsonl").read_text().splitlines()]
    assert [r["reason"] for r in runs if r["kind"] == "run"] == [TASK_COMPLETED]
    listing = run_cli("-C", str(project), "memory", "list", "--task", "1", "--json", env=LEXICAL)
    (card,) = [c for c in json.loads(listing.stdout) if c["memory_type"] != "event"]
    assert card["content"] == UV.content and card["task_hint"] == "#1 Switch the project to uv"
    other = run_cli("-C", str(project), "memory", "list", "--task", "2", "--json", env=LEXICAL)
    assert json.loads(other.stdout) == []


def test_the_todo_list_completed_is_a_trigger_and_failed_calls_are_not():
    done = {"items": [{"id": 1, "text": "a", "status": "completed"}, {"id": 2, "text": "b", "status": "completed"}]}
    assert trigger_of("todo", done, False) == TODO_COMPLETED
    assert trigger_of("todo", {"items": [*done["items"], {"id": 3, "text": "c", "status": "pending"}]}, False) is None
    assert trigger_of("todo", {"items": []}, False) is None
    assert trigger_of("task_update", {"task_id": 2, "status": "completed"}, True) is None
    assert trigger_of("task_update", {"task_id": 2, "status": "cancelled"}, False) is None


def test_two_triggers_in_one_turn_are_one_extraction_and_the_next_turn_none(brain, model, paths, embedder, monkeypatch):
    import memagent.embedding.embedders as embeddings_module

    monkeypatch.setattr(embeddings_module, "load_embedder", lambda *args, **kwargs: embedder)
    brain.facts = [UV]
    opening = open_memory(
        paths,
        Settings(extract_every_turns=0),
        "sess-t",
        model=model,
        record=lambda r: None,
        processed_ids=set(),
        current_task=lambda: "write the migration",
        warn=print,
    )
    feature = opening.feature
    conversation = Conversation()
    conversation.append("user", [text_block("Note: we always use uv.")])
    conversation.append("assistant", [text_block("Noted.")])
    for call in (
        ToolCall("t1", "task_update", {"task_id": 4, "status": "completed"}),
        ToolCall("t2", "todo", {"items": [{"id": 1, "text": "x", "status": "completed"}]}),
    ):
        assert feature.check_tool(call) is None
        feature.after_tool(call, ToolOutcome("ok"))
    feature.after_turn(conversation)
    feature.learner.drain(60)
    conversation.append("user", [text_block("Thanks.")])
    conversation.append("assistant", [text_block("Welcome.")])
    feature.after_turn(conversation)
    feature.learner.drain(60)
    runs = LearningHistory.for_paths(paths).records("run")
    assert [r["reason"] for r in runs] == [TODO_COMPLETED]
    (card,) = feature.service.list(include_all=True, limit=5)
    assert card.task_hint == "write the migration"
    feature.close()
