"""Background shells in a real session: real processes (in the sandbox when it starts), read twice,
filtered, capped, killed, and none left once the session closes."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from memagent.llm.scripted import ScriptedModel, reply, tool_call
from memagent.runtime import SessionOptions, open_session
from memagent.ui.commands import run_command
from process_kit import running


def unique(tag: str) -> str:
    return f"{tag}{os.getpid()}{time.monotonic_ns() % 10**9}"


def results(session) -> list[str]:
    found = []
    for message in session.agent.conversation.messages:
        for block in message["content"]:
            if block.get("type") == "tool_result":
                content = block["content"]
                found.append(content if isinstance(content, str) else "".join(b.get("text", "") for b in content))
    return found


def wait_for(predicate, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.fixture
def root(tmp_path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def test_started_read_twice_killed_and_nothing_left(root):
    marker = unique("bgmark")
    command = f"i=0; while true; do i=$((i+1)); echo line-$i; sleep 0.2; done # {marker}"
    model = ScriptedModel(
        [
            reply(tool_call("bash", {"command": command, "run_in_background": True})),
            reply("started"),
            reply(tool_call("bash_output", {"bash_id": "bash_1"})),
            reply("read once"),
            reply(tool_call("bash_output", {"bash_id": "bash_1"})),
            reply("read twice"),
            reply(tool_call("kill_shell", {"shell_id": "bash_1"})),
            reply("killed"),
        ]
    )
    session = open_session(SessionOptions(root=root, memory=False, auto_approve=True), model=model)
    started = time.monotonic()
    list(session.agent.run_turn("start it"))
    assert time.monotonic() - started < 10  # the id comes back at once
    assert "Command running in background with ID: bash_1" in results(session)[-1]
    wait_for(lambda: running(marker))
    time.sleep(1.0)
    list(session.agent.run_turn("read"))
    first = results(session)[-1]
    assert "running for" in first and "line-1\n" in first
    time.sleep(1.0)
    list(session.agent.run_turn("read again"))
    second = results(session)[-1]
    first_lines = set(re.findall(r"line-\d+", first))
    second_lines = set(re.findall(r"line-\d+", second))
    assert second_lines and not (first_lines & second_lines)  # only what is new
    list(session.agent.run_turn("stop it"))
    assert "Killed bash_1" in results(session)[-1]
    wait_for(lambda: not running(marker), 10)
    session.close()


def test_session_close_kills_every_background_command(root):
    markers = [unique("bgclose"), unique("bgclose2")]
    model = ScriptedModel(
        [
            reply(
                tool_call("bash", {"command": f"sleep 300 # {markers[0]}", "run_in_background": True}),
                tool_call("bash", {"command": f"(sleep 300 & wait) # {markers[1]}", "run_in_background": True}),
            ),
            reply("two running"),
        ]
    )
    session = open_session(SessionOptions(root=root, memory=False, auto_approve=True), model=model)
    list(session.agent.run_turn("start two"))
    wait_for(lambda: all(running(m) for m in markers))
    pids = [p for m in markers for p in running(m)]
    reply_text = run_command("/bashes", lambda: session).text
    assert "bash_1" in reply_text and "bash_2" in reply_text and "running for" in reply_text
    session.close()
    wait_for(lambda: not any(running(m) for m in markers), 10)
    assert all(
        not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2] for pid in pids
    )


def test_filter_capping_and_errors(root):
    marker = unique("bgfilter")
    # one process for the 3,000 rows (a fork per row takes minutes on a loaded machine)
    command = f"seq 1 3000 | sed 's/.*/row & xxxxxxxxxxxxxxxxxxxx/'; echo ERROR boom # {marker}"
    model = ScriptedModel(
        [
            reply(tool_call("bash", {"command": command, "run_in_background": True})),
            reply("ok"),
            reply(tool_call("bash_output", {"bash_id": "bash_1", "filter": "^ERROR"})),
            reply("filtered"),
            reply(tool_call("bash_output", {"bash_id": "bash_9"})),
            reply("unknown"),
            reply(tool_call("bash_output", {"bash_id": "bash_1", "filter": "("})),
            reply("bad regex"),
            reply(tool_call("kill_shell", {"shell_id": "bash_1"})),
            reply("ended"),
        ]
    )
    session = open_session(SessionOptions(root=root, memory=False, auto_approve=True), model=model)
    list(session.agent.run_turn("go"))
    shell = session.features[-1].registry.get("bash_1")
    wait_for(lambda: shell.status != "running", 60)
    list(session.agent.run_turn("errors only"))
    filtered = results(session)[-1]
    assert "ERROR boom" in filtered and "row 1 " not in filtered and "completed (exit code 0)" in filtered
    list(session.agent.run_turn("unknown id"))
    assert "no background shell 'bash_9'" in results(session)[-1]
    list(session.agent.run_turn("bad regex"))
    assert "not a valid regular expression" in results(session)[-1]
    list(session.agent.run_turn("kill"))
    assert "had already ended" in results(session)[-1]
    session.close()


def test_long_output_is_capped_and_saved_redacted(root, isolated_env):
    (isolated_env / "config.toml").write_text("output_cap_chars = 2000\n")
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    command = f"echo token {secret}; seq 1 20000"
    model = ScriptedModel(
        [
            reply(tool_call("bash", {"command": command, "run_in_background": True})),
            reply("ok"),
            reply(tool_call("bash_output", {"bash_id": "bash_1"})),
            reply("read"),
        ]
    )
    session = open_session(SessionOptions(root=root, memory=False, auto_approve=True), model=model)
    list(session.agent.run_turn("go"))
    shell = session.features[-1].registry.get("bash_1")
    wait_for(lambda: shell.status != "running")
    list(session.agent.run_turn("read"))
    text = results(session)[-1]
    assert len(text) < 4000 and "chars omitted" in text and "20000" in text
    saved = re.search(r"saved to (\S+?)[,\]]", text).group(1)
    saved_text = (root / saved).read_text()
    assert secret not in saved_text and "REDACTED" in saved_text
    session.close()
    assert secret not in (root / ".transcripts" / f"{session.session_id}.jsonl").read_text()


def test_a_background_command_is_approved_like_bash(root):
    from memagent.agent.loop import Approval

    asked = []

    def approver(tool, tool_input, summary, *rest):
        asked.append((tool.name, tool_input.get("command")))
        return Approval.DENY

    model = ScriptedModel(
        [reply(tool_call("bash", {"command": "sleep 100", "run_in_background": True})), reply("denied")]
    )
    session = open_session(SessionOptions(root=root, memory=False), model=model, approver=approver)
    list(session.agent.run_turn("start"))
    assert asked == [("bash", "sleep 100")]
    assert session.features[-1].registry.shells() == []
    session.close()
