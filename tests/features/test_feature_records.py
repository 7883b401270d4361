"""Transcript records a feature owns: it declares their kinds, writes them, and restores its state
from them when a session is resumed (and after a rewind); the core's transcript and resume code
name none of them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memagent.context.transcript import RECORD_TYPES, read_records
from memagent.features import with_slash_commands
from memagent.features.continuity import ContinuityFeature
from memagent.features.subagents import SubagentsFeature
from memagent.features.todos import TodoFeature
from memagent.llm.scripted import ScriptedModel, reply, tool_call
from memagent.runtime import SessionOptions, open_session

SRC = Path(__file__).resolve().parents[2] / "src" / "memagent"
FEATURE_KINDS = {
    kind
    for feature in (TodoFeature, SubagentsFeature, ContinuityFeature, *with_slash_commands())
    for kind in feature.record_kinds
}


def _todo_call(*items: tuple[int, str, str]):
    return tool_call("todo", {"items": [{"id": i, "text": text, "status": status} for i, text, status in items]})


def _records(root: Path, session_id: str) -> list[dict]:
    return read_records(root / ".transcripts" / f"{session_id}.jsonl").records


def _open(root: Path, *script, **options):
    return open_session(SessionOptions(root=root, memory=False, **options), model=ScriptedModel(list(script)))


@pytest.fixture
def root(tmp_path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def test_the_core_names_no_features_record():
    assert FEATURE_KINDS == {"todo", "subagent", "session_summary"}
    assert not FEATURE_KINDS & RECORD_TYPES
    for module in ("context/transcript.py", "context/resume.py", "context/conversation.py"):
        source = (SRC / module).read_text()
        for kind in FEATURE_KINDS:
            as_type = rf"[\"']type[\"']\)?\s*(==|:)\s*[\"']{kind}[\"']"  # "type": "todo", get("type") == "todo"
            as_doc = rf"^- ``{kind}``:"  # a record type documented in a docstring
            assert not re.search(as_type, source), f"{module} names the {kind!r} record"
            assert not re.search(as_doc, source, re.MULTILINE), f"{module} documents the {kind!r} record"


def test_a_resumed_session_gets_its_todo_list_back_through_the_feature(root):
    first = _open(root, reply(_todo_call((1, "port the parser", "in_progress"))), reply("on it"))
    list(first.agent.run_turn("port the parser"))
    first.close()

    second = _open(root, reply("continuing"), continue_latest=True)
    try:
        assert second.feature(TodoFeature).manager.items == [
            {"id": "1", "text": "port the parser", "status": "in_progress"}
        ]
        assert not any("todo" in w for w in second.warnings)
    finally:
        second.close()
    # written again in the new transcript, so a resume of a resume has it too
    todo = [r for r in _records(root, second.session_id) if r["type"] == "todo"]
    assert todo and todo[-1]["items"][0]["text"] == "port the parser"

    third = _open(root, reply("still here"), continue_latest=True)
    try:
        assert "port the parser" in third.feature(TodoFeature).manager.render()
    finally:
        third.close()


def test_a_damaged_saved_list_is_dropped_with_one_warning(root):
    first = _open(root, reply(_todo_call((1, "a", "in_progress"))), reply("ok"))
    list(first.agent.run_turn("go"))
    first.close()
    path = root / ".transcripts" / f"{first.session_id}.jsonl"
    lines = path.read_text().splitlines()
    damaged = [{"id": 1, "text": "a", "status": "in_progress"}, {"id": 2, "text": "b", "status": "in_progress"}]
    lines.append(json.dumps({"type": "todo", "time": "2026-11-25T10:00:00Z", "items": damaged}))
    path.write_text("\n".join(lines) + "\n")

    second = _open(root, reply("ok"), continue_latest=True)
    try:
        assert second.feature(TodoFeature).manager.items == []
        found = [w for w in second.warnings if w.startswith("the saved todo list could not be restored")]
        assert len(found) == 1 and "\n" not in found[0]
    finally:
        second.close()


def test_resume_after_a_rewind_restores_the_list_the_rewind_left(root):
    session = _open(
        root,
        reply(_todo_call((1, "first step", "in_progress"))),
        reply("one"),
        reply(_todo_call((1, "first step", "completed"), (2, "second step", "in_progress"))),
        reply("two"),
        auto_approve=True,
    )
    list(session.agent.run_turn("turn one"))
    list(session.agent.run_turn("turn two"))
    session.rewind(session.plan_rewind(2), code=False)
    assert session.todo.items == [{"id": "1", "text": "first step", "status": "in_progress"}]
    session.close()

    again = _open(root, reply("back"), continue_latest=True)
    try:
        assert again.feature(TodoFeature).manager.items == [{"id": "1", "text": "first step", "status": "in_progress"}]
    finally:
        again.close()


def test_a_session_without_a_todo_record_writes_none_on_resume(root):
    first = _open(root, reply("hello"))
    list(first.agent.run_turn("hi"))
    first.close()
    second = _open(root, reply("again"), continue_latest=True)
    list(second.agent.run_turn("more"))
    second.close()
    assert not [r for r in _records(root, second.session_id) if r["type"] == "todo"]
