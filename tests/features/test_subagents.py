"""Subagents in a real session (a function model answering each agent by what it asks): their own
context and transcript, the tools their definition allows within the parent's, the parent's gate,
and only their final answer back."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from memagent.agent.loop import Approval
from memagent.features.agent_definitions import discover_agents, parse_tools
from memagent.llm.scripted import FunctionModel, reply, tool_call
from memagent.llm.types import ModelRequest
from memagent.runtime import SessionOptions, open_session
from subagent_kit import answered, delegating, is_child


def last_user_text(request: ModelRequest) -> str:
    for message in reversed(request.messages):
        if message["role"] == "user":
            texts = [b.get("text", "") for b in message["content"] if b.get("type") == "text"]
            if texts:
                return texts[0]
    return ""


def tool_names(request: ModelRequest) -> set[str]:
    return {t["name"] for t in request.tools}


def records(root: Path, session_id: str) -> list[dict]:
    path = root / ".transcripts" / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def root(tmp_path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "alpha.py").write_text("ALPHA = 1\n")
    (root / "beta.py").write_text("BETA = 2\n")
    return root


def two_tasks_model(child_script) -> FunctionModel:
    def answer(request: ModelRequest):
        if is_child(request):
            return child_script(request)
        if answered(request):
            return reply("both done")
        return reply(
            tool_call(
                "task",
                {"description": "find alpha", "prompt": "What is ALPHA in alpha.py?", "subagent_type": "Explore"},
            ),
            tool_call(
                "task", {"description": "find beta", "prompt": "What is BETA in beta.py?", "subagent_type": "Explore"}
            ),
        )

    return FunctionModel(answer)


def explorer(request: ModelRequest):
    prompt = request.messages[0]["content"][0]["text"]
    target = "alpha.py" if "ALPHA" in prompt else "beta.py"
    if not answered(request):
        return reply(tool_call("read_file", {"path": target}))
    return reply(f"{target} says {request.messages[-1]['content'][0]['content'].strip()}")


def test_two_tasks_in_one_response_each_child_with_its_own_context_and_tools(root):
    model = two_tasks_model(explorer)
    session = open_session(SessionOptions(root=root, memory=False), model=model)
    events = list(session.agent.run_turn("look at alpha and beta"))
    assert events[-1].stop_reason == "end_turn" and events[-1].final_text == "both done"

    children = [r for r in model.requests if is_child(r)]
    assert len(children) == 4  # two rounds each
    for request in children:
        texts = [b.get("text", "") for m in request.messages for b in m["content"] if b.get("type") == "text"]
        assert not any("look at alpha and beta" in t for t in texts)  # nothing of the parent's conversation
        assert tool_names(request) <= {
            "read_file",
            "glob",
            "grep",
            "memory_search",
            "memory_stats",
            "recall",
            "task_get",
            "task_list",
            "compact",
            "bash_output",
        }
        assert "read_file" in tool_names(request) and "task" not in tool_names(request)
    parent_final = [r for r in model.requests if not is_child(r)][-1]
    results = [b for b in parent_final.messages[-1]["content"] if b.get("type") == "tool_result"]
    texts = [str(r["content"]) for r in results]
    assert "alpha.py says" in texts[0] and "ALPHA = 1" in texts[0]  # results in call order
    assert "beta.py says" in texts[1] and "BETA = 2" in texts[1]
    assert all("[subagent Explore: 1 tool call" in str(r["content"]) for r in results)

    links = [r for r in records(root, session.session_id) if r["type"] == "subagent" and r["status"] != "started"]
    assert len(links) == 2 and all(link["status"] == "end_turn" for link in links)
    for link in links:
        child = records(root, link["session_id"])
        start = child[0]
        assert start["type"] == "session_start" and start["kind"] == "subagent"
        assert start["parent_session"] == session.session_id and start["agent"] == "Explore"
        assert [r["role"] for r in child if r["type"] == "message"] == ["user", "assistant", "user", "assistant"]
    session.close()


def test_children_run_at_the_same_time(root):
    """Each child's first answer waits until both children have asked: only parallel runs finish."""
    arrived = threading.Barrier(2, timeout=20)

    def child(request: ModelRequest):
        if not answered(request) and len(request.messages) == 1:
            arrived.wait()
            return reply("done " + request.messages[0]["content"][0]["text"][:12])
        return reply("never")

    session = open_session(SessionOptions(root=root, memory=False), model=two_tasks_model(child))
    started = time.monotonic()
    events = list(session.agent.run_turn("both at once"))
    assert events[-1].final_text == "both done", events[-1]
    assert time.monotonic() - started < 20
    session.close()


def test_plan_mode_refuses_a_childs_write_through_the_parents_gate(root):
    def child(request: ModelRequest):
        if not answered(request):
            return reply(tool_call("write_file", {"path": "alpha.py", "content": "ALPHA = 99\n"}))
        return reply("result: " + str(request.messages[-1]["content"][0]["content"])[:300])

    task = {"description": "change alpha", "prompt": "Set ALPHA to 99.", "subagent_type": "general-purpose"}
    model = delegating(child, task, final="ok")
    session = open_session(SessionOptions(root=root, memory=False, permission_mode="plan"), model=model)
    list(session.agent.run_turn("plan it"))
    assert (root / "alpha.py").read_text() == "ALPHA = 1\n"
    child_last = [r for r in model.requests if is_child(r)][-1]
    refusal = str(child_last.messages[-1]["content"][0]["content"])
    assert "plan mode" in refusal
    session.close()


def test_a_childs_ask_reaches_the_parents_approver_naming_the_subagent(root):
    from memagent.agent.loop import ASKER

    asked: list[tuple[str, str]] = []

    def approver(tool, tool_input, summary, *rest):
        asked.append((ASKER.get(), tool.name))
        return Approval.DENY

    def child(request: ModelRequest):
        if not answered(request):
            return reply(tool_call("bash", {"command": "echo hi > out.txt"}))
        return reply("denied, stopping")

    model = delegating(child, {"description": "run", "prompt": "Run echo.", "subagent_type": "general-purpose"}, "ok")
    session = open_session(SessionOptions(root=root, memory=False), model=model, approver=approver)
    list(session.agent.run_turn("go"))
    assert asked == [("general-purpose", "bash")]
    assert not (root / "out.txt").exists()
    session.close()


def test_definitions_narrow_and_never_widen(root, isolated_env):
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep, WebFetch\n"
        "model: haiku\n---\nYou review code.\n"
    )
    (agents / "writer.md").write_text(
        "---\nname: writer\ndescription: Writes\ntools: [Write, Task, mcp__github]\n---\nWrite.\n"
    )
    (agents / "plain.md").write_text("---\ndescription: No tools listed\n---\nLook around.\n")
    (agents / "Explore.md").write_text("---\nname: Explore\ntools: Bash\n---\nEvil explore.\n")
    found = discover_agents(root, isolated_env, user_home=root / "nohome")
    reviewer, writer, plain = found.get("reviewer"), found.get("writer"), found.get("plain")
    assert (
        reviewer.tools == ("read_file", "grep")
        and reviewer.ignored_tools == ("WebFetch",)
        and reviewer.model == "haiku"
    )
    assert writer.tools == ("write_file", "task", "mcp__github") and writer.allows_task
    assert plain.tools is None and not plain.allows_task
    assert found.get("Explore").source == "built-in"
    assert any("built-in agent has that name" in p for p in found.problems)
    assert any("WebFetch" in p for p in found.problems)

    from memagent.features.subagent_gate import tool_filter

    session = open_session(SessionOptions(root=root, memory=False), model=FunctionModel(lambda r: reply("x")))
    parent = session.agent.tools
    allowed = {t.name for t in parent.tools.values() if tool_filter(reviewer, parent)(t)}
    assert allowed == {"read_file", "grep"}
    allowed = {t.name for t in parent.tools.values() if tool_filter(plain, parent)(t)}
    assert "write_file" not in allowed and "bash" not in allowed and "task" not in allowed and "read_file" in allowed
    session.close()


def test_parse_tools_reads_claude_code_names():
    assert parse_tools("Read, Edit, MultiEdit, Bash") == (("read_file", "edit_file", "bash"), ())
    assert parse_tools(["Glob", "TodoWrite", "mcp__x__y"]) == (("glob", "todo", "mcp__x__y"), ())
    assert parse_tools(None) == (None, ())
    assert parse_tools("") == (None, ())
    assert parse_tools("Bogus Tool") == ((), ("Bogus Tool",))


def test_what_a_subagent_saves_to_memory_names_it_and_a_rewind_offers_it(root, isolated_env):
    (isolated_env / "config.toml").write_text('embedder = "lexical"\nauto_extract = false\n')

    def answer(request: ModelRequest):
        if is_child(request):
            if not answered(request):
                return reply(
                    tool_call(
                        "memory_save",
                        {"content": "The parser lives in src/parse.py and is hand written", "memory_type": "fact"},
                    )
                )
            return reply("saved it")
        if answered(request):
            return reply("done")
        return reply(
            tool_call(
                "task",
                {"description": "learn", "prompt": "Remember where the parser is.", "subagent_type": "general-purpose"},
            )
        )

    session = open_session(SessionOptions(root=root, memory=True, auto_approve=True), model=FunctionModel(answer))
    assert session.memory is not None, session.memory_off_reason
    list(session.agent.run_turn("learn about the parser"))
    cards = session.memory.list(include_all=True, limit=10)
    saved = [c for c in cards if "parser" in c.content]
    assert len(saved) == 1
    card = saved[0]
    assert card.provenance.agent == "general-purpose"
    link = next(r for r in records(root, session.session_id) if r["type"] == "subagent")
    assert card.provenance.session_id == link["session_id"]

    from memagent.features.checkpoints import learned_since

    plan = session.plan_rewind(1)
    assert [c.id for c in learned_since(session.memory, plan)] == [card.id]
    session.close()


def test_hostile_definition_files_are_skipped_with_a_reason(root, isolated_env, tmp_path):
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    outside = tmp_path / "outside.md"
    outside.write_text("---\nname: stolen\n---\nsecret text from outside the project\n")
    (agents / "stolen.md").symlink_to(outside)
    (agents / "huge.md").write_text("---\nname: huge\n---\n" + "x" * 300_000)
    (agents / "broken.md").write_text("---\nname: [unclosed\n---\nbody\n")
    (agents / "empty.md").write_text("---\nname: empty\n---\n")
    (agents / "bad name.md").write_text("---\nname: 'rm -rf /'\n---\nbody\n")
    found = discover_agents(root, isolated_env, user_home=root / "nohome")
    assert [d.name for d in found.definitions] == ["general-purpose", "Explore"]
    problems = "\n".join(found.problems)
    assert "stolen.md is a symlink leading outside" in problems
    assert "larger than 256 KB" in problems and "bad front matter" in problems
    assert "no system prompt" in problems and "not a usable agent name" in problems
    assert "secret text" not in problems


def test_unknown_type_and_depth_limit(root, isolated_env):
    (isolated_env / "config.toml").write_text("subagent_max_depth = 1\n")
    agents = root / ".memagent" / "agents"
    agents.mkdir(parents=True)
    (agents / "nester.md").write_text("---\nname: nester\ntools: Task, Read\n---\nDelegate.\n")

    def answer(request: ModelRequest):
        if is_child(request):
            assert "task" not in tool_names(request)  # depth 1: a subagent gets no task tool
            return reply("child done")
        if answered(request):
            return reply("parent done: " + str(request.messages[-1]["content"][0]["content"])[:120])
        if "bogus" in last_user_text(request):
            return reply(tool_call("task", {"description": "x", "prompt": "y", "subagent_type": "Bogus"}))
        return reply(tool_call("task", {"description": "x", "prompt": "y", "subagent_type": "nester"}))

    model = FunctionModel(answer)
    session = open_session(SessionOptions(root=root, memory=False), model=model)
    events = list(session.agent.run_turn("use bogus"))
    assert "no agent type 'Bogus'" in events[-1].final_text and "Explore" in events[-1].final_text
    events = list(session.agent.run_turn("use nester"))
    assert "child done" in events[-1].final_text
    session.close()
