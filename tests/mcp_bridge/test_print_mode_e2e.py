"""End to end through the real CLI (`memagent -p`), the real SDK and the fake Messages API:
MCP servers from $MEMAGENT_HOME/mcp.json and hooks from $MEMAGENT_HOME/config.toml."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fakeapi import FakeAnthropic, text, tool
from mcp_kit import COMPAT, TOY


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def run_print(fake, project, prompt, *flags):
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.url, "TOY_SECRET": "from-env"}
    return subprocess.run(
        [sys.executable, "-m", "memagent", "-C", str(project), "-p", prompt, "--no-memory", *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def results_of(request):
    return [b for b in request["messages"][-1]["content"] if b.get("type") == "tool_result"]


def write_servers(home, servers):
    (home / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    # a loaded CI machine can take many seconds to start a Python server
    (home / "config.toml").write_text("mcp_startup_wait = 90\nmcp_connect_timeout = 90\n")


def toy(*flags, env=None):
    return {"command": sys.executable, "args": [str(TOY), "stdio", *flags], "env": env or {}}


def test_an_mcp_tool_call_through_the_cli_and_a_broken_server_costs_one_line(isolated_env, fake, project):
    write_servers(isolated_env, {"toy": toy(env={"TOY_TOKEN": "${TOY_SECRET}"}), "broken": toy("--fail")})
    fake.add(tool("mcp__toy__echo", {"text": "hi"}, id="toolu_echo"), text("The toy answered."))
    result = run_print(fake, project, "call the toy", "--yes")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The toy answered.\n"
    names = [t["name"] for t in fake.requests[0]["tools"]]
    assert "mcp__toy__echo" in names and not any(n.startswith("mcp__broken__") for n in names)
    echo = results_of(fake.requests[1])[0]
    assert echo["content"] == "toy says: hi (TOY_TOKEN=from-env)"
    warnings = [line for line in result.stderr.splitlines() if "broken" in line]
    assert len(warnings) == 1 and "MCP server broken failed" in warnings[0]
    assert "Traceback" not in result.stderr and fake.errors == []


def test_without_yes_an_mcp_call_needs_approval(isolated_env, fake, project):
    write_servers(isolated_env, {"toy": toy()})
    fake.add(tool("mcp__toy__echo", {"text": "hi"}), text("I need approval."))
    result = run_print(fake, project, "add")
    assert result.returncode == 0, result.stderr
    refusal = results_of(fake.requests[1])[0]
    assert refusal["is_error"] is True and "needs the user's approval" in refusal["content"]


def test_a_blocking_pre_tool_use_hook_stops_the_call_and_the_model_reads_why(isolated_env, fake, project):
    (isolated_env / "config.toml").write_text(
        '[[hooks.PreToolUse]]\nmatcher = "Bash"\ncommand = "cat > hook-input.json; echo \'no shell today\' >&2; exit 2"\n'
    )
    fake.add(tool("bash", {"command": "touch ran.txt"}, id="toolu_bash"), text("The hook stopped me."))
    result = run_print(fake, project, "touch a file", "--yes")
    assert result.returncode == 0, result.stderr
    assert not (project / "ran.txt").exists()
    blocked = results_of(fake.requests[1])[0]
    assert blocked["is_error"] is True
    assert blocked["content"] == "The call was blocked before it ran: a PreToolUse hook says: no shell today"
    event = json.loads((project / "hook-input.json").read_text())
    assert event["tool_name"] == "Bash" and event["tool_input"] == {
        "command": "touch ran.txt"
    }  # Claude Code's vocabulary
    assert event["hook_event_name"] == "PreToolUse" and event["cwd"] == str(project)


def test_a_blocking_user_prompt_submit_hook_stops_the_turn_before_any_request(isolated_env, fake, project):
    (isolated_env / "config.toml").write_text(
        "[[hooks.UserPromptSubmit]]\ncommand = \"grep -q deploy && { echo 'deploys need a ticket' >&2; exit 2; }; exit 0\"\n"
    )
    result = run_print(fake, project, "deploy to production")
    assert result.returncode == 1
    assert (
        result.stderr.splitlines()[-1]
        == "memagent: prompt blocked: a UserPromptSubmit hook says: deploys need a ticket"
    )
    assert fake.requests == []


def test_an_mcp_prompt_is_a_slash_command_and_resources_are_read_through_the_cli(isolated_env, fake, project):
    write_servers(isolated_env, {"docs": {"command": sys.executable, "args": [str(COMPAT)]}})
    fake.add(
        tool("list_mcp_resources", {}, id="toolu_list"),
        tool("read_mcp_resource", {"server": "docs", "uri": "notes://readme"}, id="toolu_read"),
        text("Reviewed with the readme in mind."),
    )
    result = run_print(fake, project, "/mcp__docs__review src/app.py naming", "--yes")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Reviewed with the readme in mind.\n"
    first = fake.requests[0]
    assert first["messages"][0]["content"][0]["text"] == "Please review src/app.py with a focus on naming."
    names = [t["name"] for t in first["tools"]]
    assert {"list_mcp_resources", "read_mcp_resource", "mcp__docs__lookup"} <= set(names)
    assert "mcp__docs__background_job" not in names
    assert "docs: notes://readme (readme, text/markdown)" in results_of(fake.requests[1])[0]["content"]
    assert "Hello from a resource." in results_of(fake.requests[2])[0]["content"]
    assert fake.errors == []
    missing = run_print(fake, project, "/mcp__docs__review")
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines()[-1] == (
        "memagent: /mcp__docs__review: missing file; usage: /mcp__docs__review <file> [focus]"
    )
