"""The task tools as the model sees them: schemas, results, and error results it can act on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memagent.features.tasks import task_tools
from memagent.tasks import TaskStore
from memagent.tools.base import ToolContext, ToolRegistry


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / ".tasks"


@pytest.fixture
def registry(root: Path) -> ToolRegistry:
    return ToolRegistry.of(task_tools(lambda: TaskStore(root)))


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(root=tmp_path)


def call(registry, ctx, name, **args):
    return registry.run(name, args, ctx)


def test_schemas_use_the_contract_field_names(registry):
    schemas = {s["name"]: s["input_schema"] for s in registry.schemas()}
    assert list(schemas) == ["task_create", "task_update", "task_list", "task_get"]
    assert set(schemas["task_create"]["properties"]) == {"subject", "description", "blockedBy"}
    assert schemas["task_create"]["required"] == ["subject"]
    assert set(schemas["task_update"]["properties"]) == {"task_id", "status", "owner", "addBlockedBy", "addBlocks"}
    assert schemas["task_update"]["required"] == ["task_id"]
    assert schemas["task_list"]["properties"] == {}
    assert schemas["task_get"]["required"] == ["task_id"]
    from memagent.permissions import Effect

    effects = {t.name: t.declare(None).effects for t in registry.tools.values()}
    assert effects["task_create"] == effects["task_update"] == {Effect.TASKS}
    assert effects["task_list"] == effects["task_get"] == {Effect.READ}


def test_create_update_get_round_trip(registry, ctx, root):
    first = call(registry, ctx, "task_create", subject="Parse the config", description="TOML")
    assert not first.is_error
    assert json.loads(first.content)["id"] == 1
    second = call(registry, ctx, "task_create", subject="Use the config", blockedBy=[1])
    assert json.loads(second.content)["blockedBy"] == [1]
    got = json.loads(call(registry, ctx, "task_get", task_id=1).content)
    assert got["blocks"] == [2] and got["description"] == "TOML"
    done = call(registry, ctx, "task_update", task_id=1, status="completed", owner="agent")
    assert not done.is_error
    assert json.loads(done.content.split("\nReady now:")[0])["status"] == "completed"
    assert "Ready now: #2 Use the config" in done.content
    assert TaskStore(root).get(1).owner == "agent"


def test_listing_marks_ready_and_blocked(registry, ctx):
    assert call(registry, ctx, "task_list").content == "No tasks yet. Create one with task_create."
    call(registry, ctx, "task_create", subject="a")
    call(registry, ctx, "task_create", subject="b", blockedBy=[1])
    call(registry, ctx, "task_create", subject="c")
    call(registry, ctx, "task_update", task_id=3, status="completed")
    listing = call(registry, ctx, "task_list").content
    assert listing.splitlines() == [
        "#1 [ready] a",
        "#2 [pending, blocked by #1] b",
        "(1 completed or cancelled not shown; task_get shows any task)",
    ]


def test_blocked_refusal_tells_the_model_why(registry, ctx):
    call(registry, ctx, "task_create", subject="migrate the db")
    call(registry, ctx, "task_create", subject="deploy", blockedBy=[1])
    refused = call(registry, ctx, "task_update", task_id=2, status="in_progress")
    assert refused.is_error
    assert "task #2 cannot be set in_progress: it is blocked by #1 'migrate the db' (pending)" in refused.content
    assert "Complete (or cancel) those tasks first" in refused.content


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("task_get", {"task_id": 7}, "task #7 does not exist"),
        ("task_update", {"task_id": 1, "addBlockedBy": [1]}, "cannot block itself"),
        ("task_update", {"task_id": 1, "addBlocks": [9]}, "task #9 does not exist"),
        ("task_update", {"task_id": 1, "status": "done"}, "status"),
        ("task_create", {"subject": "  "}, "non-empty subject"),
        ("task_create", {"subject": "x", "blocked_by": [1]}, "blocked_by"),  # snake_case is not the contract
        ("task_create", {"subject": "x", "blockedBy": [5]}, "task #5 does not exist"),
    ],
)
def test_errors_are_results_not_crashes(registry, ctx, name, args, message):
    call(registry, ctx, "task_create", subject="one")
    outcome = registry.run(name, args, ctx)
    assert outcome.is_error and message in outcome.content


def test_cycle_refusal_names_the_cycle(registry, ctx):
    for subject in "abc":
        call(registry, ctx, "task_create", subject=subject)
    call(registry, ctx, "task_update", task_id=2, addBlockedBy=[1])
    call(registry, ctx, "task_update", task_id=3, addBlockedBy=[2])
    outcome = call(registry, ctx, "task_update", task_id=1, addBlockedBy=[3])
    assert outcome.is_error and "cycle #3 → #1 → #2 → #3" in outcome.content


def test_finished_blockers_are_noted(registry, ctx):
    call(registry, ctx, "task_create", subject="a")
    call(registry, ctx, "task_update", task_id=1, status="completed")
    created = call(registry, ctx, "task_create", subject="b", blockedBy=[1])
    assert not created.is_error and "#1 already finished, so not recorded as blockers" in created.content


def test_list_shows_problems_to_the_model(registry, ctx, root):
    call(registry, ctx, "task_create", subject="a")
    (root / "task_2.json").write_text("nope")
    listing = call(registry, ctx, "task_list").content
    assert "#1 [ready] a" in listing and "warning: task_2.json: invalid JSON" in listing
