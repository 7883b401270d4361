"""Subagents through the real CLI and the real anthropic SDK against the strict fake Messages API:
two task calls in one response, each child with only its own context and allowed tools, two final
answers back; plan mode refuses a child's write; Ctrl-C in the REPL kills what a child started."""

from __future__ import annotations

import json
import os
import time

import pexpect

from fakeapi import FakeAnthropic, text, tool, turn
from process_kit import running
from repl_kit import PROMPT, expect_text

PTY_DIMENSIONS = (50, 160)
READ_ONLY = {
    "read_file",
    "glob",
    "grep",
    "recall",
    "compact",
    "task_get",
    "task_list",
    "memory_search",
    "memory_stats",
    "bash_output",
}


def system_text(body: dict) -> str:
    system = body.get("system") or ""
    return system if isinstance(system, str) else "\n".join(b.get("text", "") for b in system)


def is_child(body: dict) -> bool:
    return "a subagent of memagent" in system_text(body)


def first_user_text(body: dict) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else next(b["text"] for b in content if b.get("type") == "text")


def has_results(body: dict) -> bool:
    last = body["messages"][-1]
    return (
        last["role"] == "user"
        and isinstance(last["content"], list)
        and any(b.get("type") == "tool_result" for b in last["content"])
    )


def result_texts(body: dict) -> list[str]:
    found = []
    for block in body["messages"][-1]["content"]:
        if block.get("type") == "tool_result":
            content = block.get("content")
            found.append(content if isinstance(content, str) else "".join(b.get("text", "") for b in content or []))
    return found


def test_two_subagents_in_one_response_through_the_real_sdk(run_cli, project):
    (project / "alpha.py").write_text("ALPHA = 'first'\n")
    (project / "beta.py").write_text("BETA = 'second'\n")

    def respond(body: dict):
        if is_child(body):
            target = "alpha.py" if "ALPHA" in first_user_text(body) else "beta.py"
            if not has_results(body):
                return tool("read_file", {"path": target})
            return text(f"Found in {target}: {result_texts(body)[0].strip()}")
        if has_results(body):
            return text("Both subagents reported back.")
        return turn(
            "I will ask two explorers.",
            tool(
                "task",
                {
                    "description": "alpha value",
                    "prompt": "What is ALPHA? Look in alpha.py.",
                    "subagent_type": "Explore",
                },
            ),
            tool(
                "task",
                {"description": "beta value", "prompt": "What is BETA? Look in beta.py.", "subagent_type": "Explore"},
            ),
        )

    with FakeAnthropic(responder=respond) as fake:
        done = run_cli(
            "-C", str(project), "--no-memory", "-p", "find ALPHA and BETA", env={"ANTHROPIC_BASE_URL": fake.url}
        )
        assert done.returncode == 0, done.stderr
        assert "Both subagents reported back." in done.stdout
        assert fake.errors == []
        children = [b for b in fake.requests if is_child(b)]
        parents = [b for b in fake.requests if not is_child(b)]
    assert len(children) == 4 and len(parents) == 2
    for body in children:
        words = json.dumps(body["messages"])
        assert "find ALPHA and BETA" not in words and "two explorers" not in words
        names = {t["name"] for t in body["tools"]}
        assert names <= READ_ONLY and "read_file" in names
        assert len(body["messages"]) in (1, 3)
    answers = result_texts(parents[-1])
    assert "Found in alpha.py" in answers[0] and "ALPHA = 'first'" in answers[0]
    assert "Found in beta.py" in answers[1] and "BETA = 'second'" in answers[1]
    assert all("[subagent Explore: 1 tool call" in a and "tokens in" in a for a in answers)
    assert not any("read_file" in json.dumps(m) for m in parents[-1]["messages"][:1])
    transcripts = sorted((project / ".transcripts").glob("*.jsonl"))
    kinds = [json.loads(p.read_text().splitlines()[0]).get("kind") for p in transcripts]
    assert kinds.count("subagent") == 2


def test_plan_mode_refuses_a_subagents_write(run_cli, project):
    (project / "alpha.py").write_text("ALPHA = 1\n")

    def respond(body: dict):
        if is_child(body):
            if not has_results(body):
                return tool("write_file", {"path": "alpha.py", "content": "ALPHA = 2\n"})
            return text("Refused: " + result_texts(body)[0][:200])
        if has_results(body):
            return text("The subagent said: " + result_texts(body)[0][:300])
        return tool(
            "task",
            {"description": "edit alpha", "prompt": "Set ALPHA to 2 in alpha.py.", "subagent_type": "general-purpose"},
        )

    with FakeAnthropic(responder=respond) as fake:
        done = run_cli(
            "-C",
            str(project),
            "--no-memory",
            "--permission-mode",
            "plan",
            "-p",
            "change alpha",
            env={"ANTHROPIC_BASE_URL": fake.url},
        )
        assert done.returncode == 0, done.stderr
        assert fake.errors == []
    assert (project / "alpha.py").read_text() == "ALPHA = 1\n"
    assert "plan mode" in done.stdout


def test_ctrl_c_reaches_a_subagents_running_command(spawn, fake, project):
    marker = f"{os.getpid() % 1000}.{int(time.time()) % 100000}"

    def respond(body: dict):
        if is_child(body):
            if not has_results(body):
                return tool("bash", {"command": f"sleep {marker}"})
            return text("the command ended")
        if has_results(body):
            return text("Parent saw: " + result_texts(body)[0][:100])
        return tool(
            "task", {"description": "long job", "prompt": "Run the long job.", "subagent_type": "general-purpose"}
        )

    fake.responder = respond
    fake.chores = None
    child = spawn("--yes")
    child.expect(PROMPT)
    child.send("start the long job\r")
    expect_text(child, "task(long job)")
    deadline = time.monotonic() + 30
    while not running(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    pids = running(marker)
    assert pids, "the subagent's command did not start"
    child.sendintr()
    child.expect("cancelled")
    child.expect(PROMPT)
    deadline = time.monotonic() + 15
    while running(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert running(marker) == [], f"the subagent's command outlived the cancel: {pids}"
    child.send("/exit\r")
    child.expect(pexpect.EOF)


def test_a_subagents_question_reaches_the_user_naming_the_subagent(spawn, fake, project):
    def respond(body: dict):
        if is_child(body):
            if not has_results(body):
                return tool("bash", {"command": "echo made > made.txt"})
            return text("child finished: " + result_texts(body)[0][:60])
        if has_results(body):
            return text("Parent done.")
        return tool(
            "task", {"description": "make a file", "prompt": "Create made.txt.", "subagent_type": "general-purpose"}
        )

    fake.responder = respond
    fake.chores = None
    child = spawn()
    child.expect(PROMPT)
    child.send("make the file\r")
    expect_text(child, "[subagent general-purpose] bash wants to run: echo made > made.txt")
    child.expect("Allow\\?")
    child.send("y")
    expect_text(child, "Parent done.")
    child.expect(PROMPT)
    assert (project / "made.txt").read_text() == "made\n"
    child.send("/agents\r")
    expect_text(child, "Explore  [built-in")
    child.expect(PROMPT)
    child.send("/exit\r")
    child.expect(pexpect.EOF)
    assert fake.errors == []
