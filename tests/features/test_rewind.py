"""Rewind in a real session (scripted model, real files, real git, real bash): files, conversation,
todo list and resume all go back to the start of the chosen turn."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memagent.checkpoints import CheckpointError
from memagent.context.resume import load_session
from memagent.context.rewind import RewindError
from memagent.llm.scripted import ScriptedModel, reply, tool_call
from memagent.runtime import SessionOptions, open_session


def records(session) -> list[dict]:
    return [json.loads(line) for line in session.transcript.path.read_text().splitlines() if line.strip()]


def user_texts(messages) -> list[str]:
    return [b["text"] for m in messages if m["role"] == "user" for b in m["content"] if b.get("type") == "text"]


@pytest.fixture
def root(tmp_path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "a.txt").write_text("A1\n")
    (root / "b.txt").write_text("B1\n")
    (root / "c.txt").write_text("C1\n")
    return root


def three_turns() -> list:
    return [
        reply(tool_call("write_file", {"path": "a.txt", "content": "A2\n"})),
        reply("wrote a"),
        reply(
            tool_call("todo", {"items": [{"id": 1, "text": "edit b", "status": "in_progress"}]}),
            tool_call("edit_file", {"path": "b.txt", "old_text": "B1", "new_text": "B2"}),
        ),
        reply("edited b"),
        reply(tool_call("bash", {"command": "printf 'C2\\n' > c.txt && echo made > d.txt"})),
        reply("ran bash"),
    ]


def test_rewind_to_turn_one_restores_files_conversation_and_todos(root):
    model = ScriptedModel([*three_turns(), reply("a new second start")])
    session = open_session(SessionOptions(root=root, memory=False, auto_approve=True), model=model)
    for prompt in ("change a", "change b", "change c"):
        events = list(session.agent.run_turn(prompt))
        assert events[-1].stop_reason == "end_turn", events[-1]
    assert (root / "c.txt").read_text() == "C2\n" and (root / "d.txt").exists()
    assert session.todo.items

    plan = session.plan_rewind(1)
    assert [p.first_line for p in plan.points] == ["change a", "change b", "change c"]
    restored = session.rewind(plan)

    assert [(root / n).read_text() for n in ("a.txt", "b.txt", "c.txt")] == ["A1\n", "B1\n", "C1\n"]
    assert not (root / "d.txt").exists()
    assert {c.path for c in restored.changes} == {"a.txt", "b.txt", "c.txt", "d.txt"}
    assert session.agent.conversation.messages == []
    assert session.agent.turns == 0
    assert session.todo.items == []

    list(session.agent.run_turn("start over"))
    assert user_texts(model.requests[-1].messages) == ["start over"]
    rewinds = [r for r in records(session) if r["type"] == "rewind"]
    assert rewinds[0]["to_turn"] == 1 and rewinds[0]["code"] and rewinds[0]["conversation"]
    session.close()

    resumed = load_session(root / ".transcripts", session.session_id)
    assert user_texts(resumed.messages) == ["start over"]
    again = open_session(
        SessionOptions(root=root, memory=False, continue_latest=True), model=ScriptedModel([reply("continued")])
    )
    assert user_texts(again.agent.conversation.messages) == ["start over"]
    again.close()


def test_rewind_to_a_middle_turn_keeps_earlier_turns_and_their_todo(root):
    session = open_session(
        SessionOptions(root=root, memory=False, auto_approve=True), model=ScriptedModel(three_turns())
    )
    for prompt in ("change a", "change b", "change c"):
        list(session.agent.run_turn(prompt))
    session.rewind(session.plan_rewind(3))
    assert (root / "a.txt").read_text() == "A2\n" and (root / "b.txt").read_text() == "B2\n"
    assert (root / "c.txt").read_text() == "C1\n"
    assert user_texts(session.agent.conversation.messages) == ["change a", "change b"]
    assert session.todo.items == [{"id": "1", "text": "edit b", "status": "in_progress"}]
    assert session.agent.turns == 2
    session.close()


def test_code_only_and_conversation_only(root):
    model = ScriptedModel([*three_turns(), reply("fine")])
    session = open_session(SessionOptions(root=root, memory=False, auto_approve=True), model=model)
    for prompt in ("change a", "change b", "change c"):
        list(session.agent.run_turn(prompt))
    session.rewind(session.plan_rewind(2), conversation=False)
    assert (root / "b.txt").read_text() == "B1\n" and (root / "a.txt").read_text() == "A2\n"
    assert len(user_texts(session.agent.conversation.messages)) == 3  # the conversation is kept

    session.rewind(session.plan_rewind(2), code=False)
    assert (root / "b.txt").read_text() == "B1\n"  # the files stay as they are
    assert user_texts(session.agent.conversation.messages) == ["change a"]
    list(session.agent.run_turn("again"))
    # the new turn 2 has a checkpoint of its own; the list shows the history in effect
    plan = session.plan_rewind(2)
    assert [p.first_line for p in plan.points] == ["change a", "again"]
    assert plan.point.checkpoint is not None
    session.close()


def test_rewind_errors_are_one_line_and_change_nothing(root, isolated_env):
    session = open_session(
        SessionOptions(root=root, memory=False, auto_approve=True), model=ScriptedModel(three_turns())
    )
    with pytest.raises(RewindError, match="no user turns"):
        session.plan_rewind(1)
    list(session.agent.run_turn("change a"))
    list(session.agent.run_turn("change b"))
    with pytest.raises(RewindError, match="turns 1 to 2"):
        session.plan_rewind(5)
    plan = session.plan_rewind(1)
    # the checkpoint vanished (a user deleted $MEMAGENT_HOME/checkpoints): nothing is changed
    import shutil

    shutil.rmtree(isolated_env / "checkpoints")
    with pytest.raises(CheckpointError):
        session.rewind(plan)
    assert (root / "a.txt").read_text() == "A2\n"
    assert len(user_texts(session.agent.conversation.messages)) == 2
    assert not [r for r in records(session) if r["type"] == "rewind"]
    session.close()


def test_checkpoints_off_still_rewinds_the_conversation(root, isolated_env):
    (isolated_env / "config.toml").write_text("checkpoints = false\n")
    session = open_session(
        SessionOptions(root=root, memory=False, auto_approve=True), model=ScriptedModel(three_turns())
    )
    list(session.agent.run_turn("change a"))
    assert session.checkpoints is None
    with pytest.raises(CheckpointError, match="off"):
        session.rewind(session.plan_rewind(1))
    session.rewind(session.plan_rewind(1), code=False)
    assert session.agent.conversation.messages == []
    assert (root / "a.txt").read_text() == "A2\n"
    session.close()


def test_a_project_file_cannot_turn_checkpoints_off_untrusted(root):
    (root / ".memagent.toml").write_text("checkpoints = false\n")
    session = open_session(SessionOptions(root=root, memory=False), model=ScriptedModel([reply("hi")]))
    assert session.checkpoints is not None
    assert any("checkpoints" in w for w in session.warnings)
    session.close()


def test_every_turn_records_its_checkpoint_before_any_tool_runs(root):
    session = open_session(
        SessionOptions(root=root, memory=False, auto_approve=True), model=ScriptedModel(three_turns())
    )
    for prompt in ("change a", "change b", "change c"):
        list(session.agent.run_turn(prompt))
    session.close()
    found = [r for r in records(session) if r["type"] == "checkpoint"]
    assert [r["turn"] for r in found] == [1, 2, 3]
    assert all(len(r["commit"]) == 40 for r in found)
    # the first checkpoint holds a.txt as it was before the write
    shown = subprocess.run(
        ["git", f"--git-dir={isolated_checkpoints(root)}", "show", f"{found[0]['commit']}:a.txt"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert shown == "A1\n"


def isolated_checkpoints(root: Path) -> Path:
    import os

    from memagent.checkpoints import shadow_dir

    return shadow_dir(Path(os.environ["MEMAGENT_HOME"]), root)


def test_a_resumed_session_can_rewind_to_the_turns_it_carried_over(root):
    first = open_session(
        SessionOptions(root=root, memory=False, auto_approve=True), model=ScriptedModel(three_turns()[:4])
    )
    list(first.agent.run_turn("change a"))
    list(first.agent.run_turn("change b"))
    first.close()
    model = ScriptedModel(three_turns()[4:] + [reply("redo")])
    second = open_session(
        SessionOptions(root=root, memory=False, auto_approve=True, resume_id=first.session_id), model=model
    )
    list(second.agent.run_turn("change c"))
    plan = second.plan_rewind(1)
    assert [p.first_line for p in plan.points] == ["change a", "change b", "change c"]
    assert all(p.checkpoint for p in plan.points)
    second.rewind(second.plan_rewind(2))
    assert [(root / n).read_text() for n in ("a.txt", "b.txt", "c.txt")] == ["A2\n", "B1\n", "C1\n"]
    assert user_texts(second.agent.conversation.messages) == ["change a"]
    list(second.agent.run_turn("redo b"))
    assert [p.first_line for p in second.plan_rewind(1).points] == ["change a", "redo b"]
    second.close()
    third = open_session(SessionOptions(root=root, memory=False, resume_id=second.session_id), model=ScriptedModel([]))
    assert user_texts(third.agent.conversation.messages) == ["change a", "redo b"]
    assert third.agent.conversation.turn_number == 2
    third.close()


def test_cards_learned_after_the_point_are_offered_and_forgotten(root, isolated_env):
    (isolated_env / "config.toml").write_text('embedder = "lexical"\nauto_extract = false\n')
    save = tool_call(
        "memory_save",
        {"content": "The release branch is cut every Thursday", "memory_type": "fact", "scope": "project"},
    )
    model = ScriptedModel([reply("hello"), reply(save), reply("saved"), reply("again")])
    session = open_session(SessionOptions(root=root, memory=True, auto_approve=True), model=model)
    assert session.memory is not None, session.memory_off_reason
    session.memory.save(
        content="We deploy with make deploy", memory_type="procedure", scope="project", source="user", confidence=0.9
    )
    list(session.agent.run_turn("hi"))
    list(session.agent.run_turn("remember the release day"))
    from memagent.features.checkpoints import learned_since

    plan = session.plan_rewind(2)
    learned = learned_since(session.memory, plan)
    assert [c.content for c in learned] == ["The release branch is cut every Thursday"]
    assert learned_since(session.memory, session.plan_rewind(1)) == learned  # older cards are not offered
    session.rewind(plan, forget=[c.id for c in learned])
    assert session.memory.list(include_all=True, limit=10) and all(
        c.content != "The release branch is cut every Thursday" for c in session.memory.list(include_all=True, limit=10)
    )
    rewinds = [r for r in records(session) if r["type"] == "rewind"]
    assert rewinds[-1]["forgotten"] == [learned[0].id]
    session.close()


def test_rewind_across_a_compaction_agrees_with_resume(root, isolated_env):
    from memagent.llm.scripted import FunctionModel

    (isolated_env / "config.toml").write_text("compact_tokens = 600\n")
    pad = " lorem ipsum" * 80

    def answer(request):
        if not request.tools:  # the compaction summary
            return reply("## Goal\nsummary of the early turns")
        return reply("answer to " + user_texts(request.messages)[-1][:14])

    session = open_session(SessionOptions(root=root, memory=False), model=FunctionModel(answer))
    for prompt in ("first question", "second question", "third question", "fourth question"):
        list(session.agent.run_turn(prompt + pad))
    assert [r for r in records(session) if r["type"] == "compaction"], "the test needs a compaction"
    assert [p.first_line[:15] for p in session.plan_rewind(1).points] == [
        "first question ",
        "second question",
        "third question ",
        "fourth question",
    ]

    for turn in (4, 2):
        session.rewind(session.plan_rewind(turn), code=False)
        live = [m["content"] for m in session.agent.conversation.messages]
        assert [m["content"] for m in load_session(root / ".transcripts", session.session_id).messages] == live
        assert f"{['first', 'second', 'third', 'fourth'][turn - 1]} question" not in json.dumps(live)
    assert [t[:14] for t in user_texts(session.agent.conversation.messages)] == ["first question"]
    list(session.agent.run_turn("new second" + pad))
    resumed = load_session(root / ".transcripts", session.session_id)
    assert [m["content"] for m in resumed.messages] == [m["content"] for m in session.agent.conversation.messages]
    session.close()
