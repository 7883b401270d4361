"""The loop's approval path with a permission policy: deny refuses naming the rule, allow runs
without asking, ask asks (or refuses in a non-interactive run), plan mode refuses changes, an
"always" answer is saved as a narrow rule. Real tools (bash, write_file) in a temp project."""

from __future__ import annotations

from pathlib import Path

from memagent.agent.loop import Agent, Approval
from memagent.context.conversation import Conversation
from memagent.llm.scripted import ScriptedModel, reply, tool_call
from memagent.llm.types import text_block
from memagent.permissions import Gate, Policy
from memagent.tools.base import ToolContext, ToolRegistry
from memagent.tools.builtin import builtin_tools


def make_agent(root: Path, script, *, mode="default", allow=(), ask=(), deny=(), save_rule=None, **kwargs):
    model = ScriptedModel(script)
    policy = Policy.from_settings(mode, allow, ask, deny, root=root)
    agent = Agent(
        model=model,
        tools=ToolRegistry.of(builtin_tools()),
        tool_context=ToolContext(root=root),
        system=[text_block("system")],
        conversation=Conversation(),
        permissions=Gate(policy, save_rule),
        **kwargs,
    )
    return agent, model


def run(agent: Agent, text: str) -> None:
    for _ in agent.run_turn(text):
        pass


def result_of(model: ScriptedModel, request: int = 1) -> dict:
    return model.requests[request].messages[-1]["content"][0]


class Recorder:
    def __init__(self, answer: Approval):
        self.answer, self.asked, self.reasons = answer, [], []

    def __call__(self, tool, raw, summary, reason):
        self.asked.append(raw)
        self.reasons.append(reason)
        return self.answer


def test_deny_rule_refuses_and_names_the_rule_even_with_yes(tmp_path):
    script = [reply(tool_call("bash", {"command": "touch made.txt"})), reply("ok")]
    agent, model = make_agent(tmp_path, script, deny=["Bash(touch:*)"], auto_approve=True)
    run(agent, "go")
    result = result_of(model)
    assert result["is_error"] and "Bash(touch:*)" in result["content"]
    assert not (tmp_path / "made.txt").exists()


def test_allow_rule_runs_without_asking(tmp_path):
    approver = Recorder(Approval.DENY)
    script = [reply(tool_call("bash", {"command": "touch made.txt"})), reply("ok")]
    agent, model = make_agent(tmp_path, script, allow=["Bash(touch made.txt)"], approver=approver, non_interactive=True)
    run(agent, "go")
    assert (tmp_path / "made.txt").exists() and approver.asked == []
    assert not result_of(model).get("is_error")


def test_unmatched_call_asks_and_a_non_interactive_run_refuses(tmp_path):
    script = [reply(tool_call("bash", {"command": "touch other.txt"})), reply("ok")]
    agent, model = make_agent(tmp_path, script, allow=["Bash(touch made.txt)"], non_interactive=True)
    run(agent, "go")
    assert result_of(model)["is_error"] and "--yes" in result_of(model)["content"]
    assert not (tmp_path / "other.txt").exists()


def test_always_approves_exactly_that_call_and_an_ask_rule_still_asks(tmp_path):
    approver = Recorder(Approval.ALWAYS)
    saved: list[str] = []
    script = [
        reply(tool_call("bash", {"command": "touch a.txt"})),
        reply("one"),
        reply(tool_call("bash", {"command": "touch b.txt"})),
        reply("two"),
        reply(tool_call("bash", {"command": "touch a.txt"})),
        reply("again"),
        reply(tool_call("bash", {"command": "git push --dry-run"})),
        reply("three"),
        reply(tool_call("bash", {"command": "git push --dry-run"})),
        reply("four"),
    ]
    agent, _ = make_agent(tmp_path, script, ask=["Bash(git push:*)"], approver=approver, save_rule=saved.append)
    for prompt in ("a", "b", "a again", "push", "push again"):
        run(agent, prompt)
    # "always" on `touch a.txt` approves that command only; the ask rule insists every time
    assert [raw["command"] for raw in approver.asked] == [
        "touch a.txt",
        "touch b.txt",
        "git push --dry-run",
        "git push --dry-run",
    ]
    assert saved == ["Bash(touch a.txt)", "Bash(touch b.txt)", "Bash(git push --dry-run)", "Bash(git push --dry-run)"]
    assert "Bash(git push:*)" in approver.reasons[-1]


def test_accept_edits_writes_without_asking_but_bash_asks(tmp_path):
    approver = Recorder(Approval.DENY)
    script = [
        reply(
            tool_call("write_file", {"path": "notes.md", "content": "hi\n"}),
            tool_call("bash", {"command": "touch x.txt"}),
        ),
        reply("ok"),
    ]
    agent, model = make_agent(tmp_path, script, mode="acceptEdits", approver=approver)
    run(agent, "go")
    assert (tmp_path / "notes.md").read_text() == "hi\n"
    assert [raw.get("command") for raw in approver.asked] == ["touch x.txt"]
    assert not (tmp_path / "x.txt").exists()


def test_plan_mode_reads_but_refuses_changes_with_a_clear_message(tmp_path):
    (tmp_path / "app.py").write_text("print(1)\n")
    script = [
        reply(
            tool_call("read_file", {"path": "app.py"}),
            tool_call("write_file", {"path": "app.py", "content": "x"}),
            tool_call("bash", {"command": "ls"}),
        ),
        reply("here is the plan"),
    ]
    agent, model = make_agent(tmp_path, script, mode="plan", allow=["Bash"], auto_approve=True)
    run(agent, "plan it")
    read, write, bash = model.requests[1].messages[-1]["content"][:3]
    assert not read.get("is_error") and "print(1)" in read["content"]
    for refused in (write, bash):
        assert refused["is_error"] and "plan mode" in refused["content"] and "read-only" in refused["content"]
    assert (tmp_path / "app.py").read_text() == "print(1)\n"
